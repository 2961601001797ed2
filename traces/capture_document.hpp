// The JSON documents a capture writes (count.json, stall.json, ...). The count
// passes hold every instruction's counts and are large, so committed datasets
// keep them zstd-compressed beside their name (count.json.zst for count.json);
// readers are given the plain name and take whichever of the two exists.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace atomsim::capture {

struct DocumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// PATH if it exists, else PATH.zst if that exists, else PATH.
std::filesystem::path stored_document(const std::filesystem::path& path);

// The text of the document stored for PATH, decompressed if it is stored
// compressed. Throws DocumentError "FILE: ..." when it cannot be opened or its
// compressed data is corrupt or cut short.
std::string read_document(const std::filesystem::path& path);

}  // namespace atomsim::capture
