#include "io_paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace staging::tools {
namespace {

std::string failed(const std::string& path, const char* what, int error) {
  return "'" + path + "': " + what + ": " + std::strerror(error);
}

// A name no other process uses next to `folder`'s entries, for probing.
std::string probe_name(const std::string& folder) {
  const std::string base = folder.empty() ? std::string(".") : folder;
  return base + "/.staging-probe-" + std::to_string(::getpid());
}

// The nearest prefix of `path` that exists ("." for a relative path none of whose parts do).
std::filesystem::path nearest_existing(std::filesystem::path path) {
  std::error_code ec;
  while (!path.empty() && !std::filesystem::exists(path, ec)) {
    path = path.parent_path();
  }
  return path.empty() ? std::filesystem::path(".") : path;
}

}  // namespace

std::optional<std::string> output_file_error(const std::string& path) {
  if (path.empty()) return std::string("an empty path is no file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return failed(path, "cannot write the file", EISDIR);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // no O_TRUNC: left as it was
    if (fd < 0) return failed(path, "cannot write the file", errno);
    ::close(fd);
    return std::nullopt;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return failed(path, "cannot create the file", errno);
  ::close(fd);
  ::unlink(path.c_str());
  return std::nullopt;
}

std::optional<std::string> output_folder_error(const std::string& path) {
  if (path.empty()) return std::string("an empty path is no folder name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return failed(path, "cannot use it as the output folder", ENOTDIR);
    const std::string probe = probe_name(path);
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return failed(path, "cannot write files in the folder", errno);
    ::close(fd);
    ::unlink(probe.c_str());
    return std::nullopt;
  }
  const std::string parent = nearest_existing(path).string();
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return failed(path, ("cannot create the folder: '" + parent + "'").c_str(), ENOTDIR);
  }
  const std::string probe = probe_name(parent);
  if (::mkdir(probe.c_str(), 0755) != 0) return failed(path, "cannot create the folder", errno);
  ::rmdir(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> input_file_error(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(path, "cannot open", errno);
  struct stat st {};
  const bool folder = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  ::close(fd);
  if (folder) return failed(path, "cannot read it as a file", EISDIR);
  return std::nullopt;
}

namespace {

CLI::Validator validator(std::optional<std::string> (*check)(const std::string&),
                         const char* description, const char* name) {
  return CLI::Validator([check](std::string& path) { return check(path).value_or(std::string()); },
                        description, name);
}

}  // namespace

CLI::Validator writable_file() {
  return validator(&output_file_error, "FILE", "writable file");
}

CLI::Validator writable_folder() {
  return validator(&output_folder_error, "FOLDER", "writable folder");
}

CLI::Validator readable_file() {
  return validator(&input_file_error, "FILE", "readable file");
}

}  // namespace staging::tools
