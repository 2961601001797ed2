// The Stanford bunny as the npm package `bunny` ships it (index.js:
// "exports.positions=[[x,y,z],...];exports.cells=[[a,b,c],...]"), read without
// a JavaScript engine. Errors name the file and the byte offset.
#pragma once

#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace atomsim::workload {

struct Mesh {
  std::vector<std::array<float, 3>> positions;
  std::vector<std::array<std::uint32_t, 3>> triangles;
};

struct MeshError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace mesh_detail {
// Reads "[[n,n,n],[n,n,n],...]" starting at `at`.
template <class T>
std::vector<std::array<T, 3>> triples(const std::string& text, std::size_t at, const std::string& path) {
  auto error = [&](const std::string& what) {
    throw MeshError(path + ": byte " + std::to_string(at) + ": " + what);
  };
  auto skip = [&] { while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at; };
  auto expect = [&](char c) {
    skip();
    if (at >= text.size() || text[at] != c) error(std::string("expected '") + c + "'");
    ++at;
  };
  std::vector<std::array<T, 3>> out;
  expect('[');
  skip();
  if (at < text.size() && text[at] == ']') return out;
  while (true) {
    expect('[');
    std::array<T, 3> v{};
    for (int k = 0; k < 3; ++k) {
      if (k) expect(',');
      skip();
      const char* begin = text.c_str() + at;
      char* end = nullptr;
      const double x = std::strtod(begin, &end);
      if (end == begin) error("expected a number");
      at += static_cast<std::size_t>(end - begin);
      v[k] = static_cast<T>(x);
    }
    expect(']');
    out.push_back(v);
    skip();
    if (at < text.size() && text[at] == ',') { ++at; continue; }
    expect(']');
    return out;
  }
}
}  // namespace mesh_detail

inline Mesh load_bunny(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MeshError(path + ": cannot open (run tools/install-deps.sh, which installs the npm package 'bunny')");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto find = [&](const std::string& key) {
    std::size_t at = text.find(key);
    if (at == std::string::npos) throw MeshError(path + ": no '" + key + "' (not the bunny package's index.js?)");
    return at + key.size();
  };
  Mesh m;
  m.positions = mesh_detail::triples<float>(text, find("positions="), path);
  m.triangles = mesh_detail::triples<std::uint32_t>(text, find("cells="), path);
  if (m.positions.empty() || m.triangles.empty()) throw MeshError(path + ": empty mesh");
  for (std::size_t t = 0; t < m.triangles.size(); ++t)
    for (std::uint32_t v : m.triangles[t])
      if (v >= m.positions.size())
        throw MeshError(path + ": triangle " + std::to_string(t) + " names vertex " + std::to_string(v) + " of " +
                        std::to_string(m.positions.size()));
  return m;
}

}  // namespace atomsim::workload
