#include "traces/xz_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "traces/trace.hpp"

namespace fs = std::filesystem;

namespace atomsim::trace {

namespace {

// What a header may ask the decoder for: xz -9 needs 65 MiB, the tracer's xz -1
// a few; past this a file is refused rather than allowed gigabytes.
constexpr std::uint64_t kDecoderMemoryLimit = std::uint64_t(512) << 20;
constexpr std::size_t kBufferBytes = std::size_t(1) << 16;

std::string_view lzma_problem(lzma_ret r) {
  switch (r) {
    case LZMA_FORMAT_ERROR: return "not in the xz format";
    case LZMA_DATA_ERROR: return "the compressed data is corrupt";
    case LZMA_BUF_ERROR: return "the compressed data ends early";
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_MEMLIMIT_ERROR: return "decompressing it needs more than 512 MiB";
    case LZMA_OPTIONS_ERROR: return "compressed with options liblzma does not support";
    case LZMA_UNSUPPORTED_CHECK: return "its integrity check is of a kind liblzma does not support";
    default: return "the xz decoder failed";
  }
}

}  // namespace

bool is_xz_path(const fs::path& path) { return path.extension() == ".xz"; }

TextLines::TextLines(const fs::path& path) : path_(path), in_(path, std::ios::binary), xz_(is_xz_path(path)) {
  if (!in_) throw TraceError(fmt::format("{}: cannot open the file", path.string()));
  if (!xz_) return;
  compressed_.resize(kBufferBytes);
  decoded_.resize(kBufferBytes);
  // Concatenated streams as well: a multi-threaded xz (xz -T0) may write several.
  if (lzma_stream_decoder(&stream_, kDecoderMemoryLimit, LZMA_CONCATENATED) != LZMA_OK)
    throw TraceError(fmt::format("{}: cannot start the xz decoder", path.string()));
}

TextLines::~TextLines() {
  if (xz_) lzma_end(&stream_);
}

bool TextLines::decode_more() {
  decoded_begin_ = decoded_end_ = 0;
  if (stream_ended_) return false;
  stream_.next_out = reinterpret_cast<std::uint8_t*>(decoded_.data());
  stream_.avail_out = decoded_.size();
  while (stream_.avail_out == decoded_.size() && !stream_ended_) {
    if (stream_.avail_in == 0 && !input_ended_) {
      in_.read(reinterpret_cast<char*>(compressed_.data()), static_cast<std::streamsize>(compressed_.size()));
      stream_.next_in = compressed_.data();
      stream_.avail_in = static_cast<std::size_t>(in_.gcount());
      if (in_.bad()) throw TraceError(fmt::format("{}: reading failed", path_.string()));
      input_ended_ = in_.eof();
    }
    const lzma_ret r = lzma_code(&stream_, input_ended_ ? LZMA_FINISH : LZMA_RUN);
    if (r == LZMA_STREAM_END) stream_ended_ = true;
    else if (r != LZMA_OK)
      throw TraceError(fmt::format("{}: byte {} of the compressed file: {}", path_.string(), stream_.total_in, lzma_problem(r)));
  }
  decoded_end_ = decoded_.size() - stream_.avail_out;
  return decoded_end_ > 0;
}

bool TextLines::next(std::string& line) {
  if (!xz_) {
    if (!std::getline(in_, line)) return false;
  } else {
    line.clear();
    bool any = false;
    for (;;) {
      const char* begin = decoded_.data() + decoded_begin_;
      const char* end = decoded_.data() + decoded_end_;
      const char* newline = std::find(begin, end, '\n');
      line.append(begin, newline);
      any = any || begin != end;
      if (newline != end) {
        decoded_begin_ = static_cast<std::size_t>(newline - decoded_.data()) + 1;
        break;
      }
      if (!decode_more()) {
        if (!any) return false;
        break;
      }
    }
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

TextFileWriter::TextFileWriter(const fs::path& path)
    : path_(path), partial_(path.string() + ".partial"), out_(partial_, std::ios::binary), xz_(is_xz_path(path)) {
  if (!out_) throw TraceError(fmt::format("{}: cannot write the file", partial_.string()));
  if (!xz_) return;
  encoded_.resize(kBufferBytes);
  if (lzma_easy_encoder(&stream_, 1, LZMA_CHECK_CRC64) != LZMA_OK)
    throw TraceError(fmt::format("{}: cannot start the xz encoder", path.string()));
}

TextFileWriter::~TextFileWriter() {
  if (xz_) lzma_end(&stream_);
  if (!committed_) {
    out_.close();
    std::error_code ec;
    fs::remove(partial_, ec);
  }
}

void TextFileWriter::encode(lzma_action action) {
  for (;;) {
    stream_.next_out = encoded_.data();
    stream_.avail_out = encoded_.size();
    const lzma_ret r = lzma_code(&stream_, action);
    if (r != LZMA_OK && r != LZMA_STREAM_END) throw TraceError(fmt::format("{}: the xz encoder failed", path_.string()));
    out_.write(reinterpret_cast<const char*>(encoded_.data()), static_cast<std::streamsize>(encoded_.size() - stream_.avail_out));
    if (action == LZMA_RUN ? stream_.avail_in == 0 : r == LZMA_STREAM_END) return;
  }
}

void TextFileWriter::write(std::string_view text) {
  if (!xz_) {
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  } else {
    stream_.next_in = reinterpret_cast<const std::uint8_t*>(text.data());
    stream_.avail_in = text.size();
    encode(LZMA_RUN);
  }
  if (!out_) throw TraceError(fmt::format("{}: writing failed", partial_.string()));
}

void TextFileWriter::commit() {
  if (xz_) encode(LZMA_FINISH);
  out_.close();
  if (!out_) throw TraceError(fmt::format("{}: writing failed", partial_.string()));
  fs::rename(partial_, path_);
  committed_ = true;
}

}  // namespace atomsim::trace
