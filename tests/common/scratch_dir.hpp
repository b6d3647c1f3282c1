#pragma once
// The one scratch directory of the tests: fresh and empty (mkdtemp, so parallel test binaries and several
// fixtures of one binary never share it), removed with everything in it at scope exit.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dualpath::test {

class scratch_dir {
 public:
  std::filesystem::path path;

  scratch_dir() {
    std::string name = (std::filesystem::temp_directory_path() / "dualpath-test-XXXXXX").string();
    if (!::mkdtemp(name.data())) throw std::runtime_error("scratch_dir: mkdtemp failed for " + name);
    path = name;
  }
  ~scratch_dir() {
    std::error_code ec;  // a test that failed half-way may leave anything behind; never throw from here
    std::filesystem::remove_all(path, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  std::string str() const { return path.string(); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `text` to the file `name` in the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::trunc) << text;
    return file(name);
  }
};

}  // namespace dualpath::test
