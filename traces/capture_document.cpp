#include "traces/capture_document.hpp"

#include <zstd.h>

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <memory>

namespace atomsim::capture {

std::filesystem::path stored_document(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) return path;
  std::filesystem::path compressed = path;
  compressed += ".zst";
  return std::filesystem::exists(compressed) ? compressed : path;
}

namespace {

std::string decompress(const std::string& data, const std::filesystem::path& file) {
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::string text;
  std::string chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  std::size_t last = 0;
  // Done when all input is consumed and the context had no more to give than fitted.
  for (;;) {
    ZSTD_outBuffer out{chunk.data(), chunk.size(), 0};
    last = ZSTD_decompressStream(context.get(), &out, &in);
    if (ZSTD_isError(last))
      throw DocumentError(fmt::format("{}: corrupt zstd data at byte {} ({})", file.string(), in.pos, ZSTD_getErrorName(last)));
    text.append(chunk.data(), out.pos);
    if (in.pos == in.size && out.pos < out.size) break;
  }
  if (last != 0) throw DocumentError(fmt::format("{}: zstd data cut short at byte {}", file.string(), data.size()));
  return text;
}

}  // namespace

std::string read_document(const std::filesystem::path& path) {
  const std::filesystem::path file = stored_document(path);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DocumentError(fmt::format("{}: cannot open", path.string()));
  std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.eof() && in.fail()) throw DocumentError(fmt::format("{}: read failed", file.string()));
  return file.extension() == ".zst" ? decompress(data, file) : data;
}

}  // namespace atomsim::capture
