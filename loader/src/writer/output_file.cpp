#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "ffcv/errors.hpp"

namespace ffcv {

TemporaryOutputFile::TemporaryOutputFile(std::string final_path)
    : final_path_(std::move(final_path)) {
  const std::size_t slash = final_path_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : final_path_.substr(0, slash);
  const std::string name = slash == std::string::npos ? final_path_ : final_path_.substr(slash + 1);
  if (name.empty()) throw IoError(final_path_, "write (the path names a directory)", EISDIR);
  struct stat info {};
  if (::stat(final_path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw IoError(final_path_, "write (it is a directory)", EISDIR);
  }
  std::string pattern = dir + "/." + name + ".tmp-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  fd_ = ::mkstemp(buffer.data());
  if (fd_ < 0) throw IoError(final_path_, "create a file in '" + dir + "'", errno);
  temp_path_ = buffer.data();
  ::fchmod(fd_, 0644);
}

TemporaryOutputFile::~TemporaryOutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void TemporaryOutputFile::write_at(std::uint64_t offset, const void* data, std::uint64_t size) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::pwrite(fd_, bytes, size, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      throw IoError(final_path_, "write", errno);
    }
    bytes += written;
    offset += static_cast<std::uint64_t>(written);
    size -= static_cast<std::uint64_t>(written);
  }
}

void TemporaryOutputFile::commit() {
  if (::fsync(fd_) != 0) throw IoError(final_path_, "flush to disk", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw IoError(final_path_, "close", errno);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    throw IoError(final_path_, "rename the finished temporary file onto", errno);
  }
  committed_ = true;
}

}  // namespace ffcv
