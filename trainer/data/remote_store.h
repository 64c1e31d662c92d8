// Objects read whole from HTTP(S) servers and S3-compatible stores, for shards: libcurl does the
// transport, s3_sign.h signs s3:// requests (with any libcurl: the image's 7.68 has no SigV4 of
// its own); this file decides what to ask for and when to ask again. A download lands in an
// anonymous memory file (memfd), so the tar listing and the sample reads that work on a local
// shard's descriptor work on it unchanged.
//
// s3:// URLs are addressed and signed as s3_request.h says.
//
// Everything a server sends is untrusted: only http and https are spoken (redirects too; a signed
// s3:// request follows none), an object has at most RemoteOptions::max_bytes, and a status is
// reported, never a body.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace dl::data {

// Whether `location` names a remote object: http://, https:// or s3://.
bool is_remote(const std::string& location);

struct RemoteOptions {
  // Tries of one object on a 5xx or 429 status, a reset or dropped connection, a timeout; each
  // waits backoff_seconds * 2^(try - 1), at most 8 s, before asking again, and a download cut
  // short resumes with a Range request where the server honours it.
  int tries = 7;
  double backoff_seconds = 0.25;
  // A transfer slower than this many bytes a second for stall_seconds is dropped and retried.
  long stall_bytes_per_second = 1024;
  long stall_seconds = 30;
  long connect_timeout_seconds = 20;
  std::uint64_t max_bytes = std::uint64_t{16} << 30;
  // One line per retry ("s3://b/k: HTTP 503, try 2 of 7 in 0.5 s").
  std::function<void(const std::string&)> warn;
};

// The defaults above, with AWS_MAX_ATTEMPTS (as the AWS tools read it: the tries, 1 to 100)
// where it is set, for every remote read. Throws DataError naming the variable for another value.
RemoteOptions remote_options_from_environment();

// A downloaded object: an anonymous memory file the caller owns (close it), `size` bytes long.
struct RemoteObject {
  int fd = -1;
  std::uint64_t size = 0;
};

// The wait before try `next_try` (2 and up): base_seconds * 2^(next_try - 2), at most 8 s. Any
// try count is defined (AWS_MAX_ATTEMPTS allows 100; a shift would overflow from 33).
double retry_wait_seconds(int next_try, double base_seconds);

// Downloads `url` (http, https or s3) whole. Throws MissingData on 404, DataError on 403 (saying
// to check the credentials), on any other 4xx, on a body over max_bytes, and when the tries run
// out, each one line naming the URL and the status or the transport's error.
RemoteObject fetch_object(const std::string& url, const RemoteOptions& options = {});

// A small object's text (a shard list), at most 16 MiB.
std::string fetch_text(const std::string& url, const RemoteOptions& options = {});

// Whether this build can read remote objects (it was built with libcurl and OpenSSL).
bool remote_reads_available();

}  // namespace dl::data
