// Text files that may be xz-compressed, read line by line and written whole.
// Accel-Sim's tracer and its post-processing write kernel-N.traceg.xz when
// traces are compressed (TRACE_FILE_COMPRESS=1), and its parser reads any
// name ending in .xz through the xz format; these read and write that format
// with liblzma, as streams, never holding a whole file.
#pragma once

#include <lzma.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace atomsim::trace {

// Whether `path` names an xz-compressed file (by its name, as Accel-Sim decides).
bool is_xz_path(const std::filesystem::path& path);

// Lines of a text file, decompressed on the fly when its name ends in .xz.
// Throws TraceError naming the file (and, for compressed data that is corrupt
// or ends early, the byte of the compressed file where it stopped).
class TextLines {
 public:
  explicit TextLines(const std::filesystem::path& path);
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;
  // The next line, without its line end; false at the end of the file.
  bool next(std::string& line);

 private:
  bool decode_more();  // fills the decoded buffer; false once the stream has ended

  std::filesystem::path path_;
  std::ifstream in_;
  bool xz_ = false, input_ended_ = false, stream_ended_ = false;
  lzma_stream stream_ = LZMA_STREAM_INIT;
  std::vector<std::uint8_t> compressed_;  // for xz only; on the heap, since readers live on stacks
  std::vector<char> decoded_;
  std::size_t decoded_begin_ = 0, decoded_end_ = 0;
};

// A text file written whole or not at all: into PATH.partial, renamed to PATH
// by commit(); xz-compressed when PATH ends in .xz (the preset Accel-Sim's
// tracer uses, xz -1). Throws TraceError naming the file when a write fails.
class TextFileWriter {
 public:
  explicit TextFileWriter(const std::filesystem::path& path);
  ~TextFileWriter();
  TextFileWriter(const TextFileWriter&) = delete;
  TextFileWriter& operator=(const TextFileWriter&) = delete;
  void write(std::string_view text);
  void commit();

 private:
  void encode(lzma_action action);

  std::filesystem::path path_, partial_;
  std::ofstream out_;
  bool xz_ = false, committed_ = false;
  lzma_stream stream_ = LZMA_STREAM_INIT;
  std::vector<std::uint8_t> encoded_;  // for xz only
};

}  // namespace atomsim::trace
