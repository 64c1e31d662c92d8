// Whole-object downloads over libcurl with retries (see remote_store.h).
#include "data/remote_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/fd_io.h"
#include "data/data_error.h"
#include "data/file_bytes.h"
#include "data/s3_request.h"

#ifdef DL_HAVE_CURL
#include <curl/curl.h>

#include <ctime>
#include <mutex>

#include "data/s3_sign.h"
#endif

namespace dl::data {

bool is_remote(const std::string& location) {
  return location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0 ||
         location.rfind("s3://", 0) == 0;
}

RemoteOptions remote_options_from_environment() {
  RemoteOptions options;
  if (const char* v = std::getenv("AWS_MAX_ATTEMPTS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 100) {
      throw DataError(std::string("AWS_MAX_ATTEMPTS=") + v +
                      ": expected the tries of a remote read, a whole number from 1 to 100");
    }
    options.tries = static_cast<int>(n);
  }
  return options;
}

double retry_wait_seconds(int next_try, double base_seconds) {
  constexpr double cap = 8.0;
  // Doubling stops at the cap, so the exponent never grows past what a double holds.
  double wait = base_seconds;
  for (int t = 2; t < next_try && wait < cap; ++t) wait *= 2.0;
  return std::min(cap, wait);
}

#ifdef DL_HAVE_CURL

namespace {

// libcurl wants one global initialisation before any handle, not thread-safe itself.
void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Where one attempt's body goes: into the memory file from `start` (the bytes earlier attempts
// got, asked for again with a Range), or from 0 when the server ignores the Range.
struct Sink {
  CURL* curl = nullptr;
  int fd = -1;
  std::uint64_t start = 0;
  std::uint64_t written = 0;
  std::uint64_t max_bytes = 0;
  bool decided = false;
  bool keep = false;  // a 200 or 206 body, not an error page
  bool too_large = false;
  bool write_failed = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  Sink& sink = *static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (!sink.decided) {
    long status = 0;
    curl_easy_getinfo(sink.curl, CURLINFO_RESPONSE_CODE, &status);
    sink.decided = true;
    sink.keep = status == 200 || status == 206;
    if (status == 200) sink.start = 0;  // the whole object again
  }
  if (!sink.keep) return n;  // an error's body is read and dropped
  if (sink.start + sink.written + n > sink.max_bytes) {
    sink.too_large = true;
    return 0;  // aborts the transfer
  }
  if (!pwrite_fully(sink.fd, data, n, sink.start + sink.written)) {
    sink.write_failed = true;
    return 0;
  }
  sink.written += n;
  return n;
}

// Transport errors that asking again can cure (a reset, a drop, a timeout, a refused connection);
// the others (a malformed URL, a certificate that fails, a redirect loop) cannot.
bool transient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::string status_text(long status) {
  switch (status) {
    case 403:
      return "HTTP 403 (access denied)";
    case 404:
      return "HTTP 404 (not found)";
    case 429:
      return "HTTP 429 (too many requests)";
    case 500:
      return "HTTP 500 (internal server error)";
    case 502:
      return "HTTP 502 (bad gateway)";
    case 503:
      return "HTTP 503 (service unavailable)";
    default:
      return "HTTP " + std::to_string(status);
  }
}

struct Attempt {
  CURLcode rc = CURLE_OK;
  long status = 0;
  std::string error;
};

Attempt attempt(const std::string& url, const S3Request* s3, const RemoteOptions& options,
                Sink& sink) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) throw DataError(url + ": libcurl could not start a transfer");
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  sink.curl = curl;
  sink.decided = false;
  sink.written = 0;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // A signed request names its host, so no redirect can carry it (and its session token stays
  // with the host it was meant for): a 3xx answer is then the error it reports.
  const bool signing = s3 != nullptr && !s3->access_key.empty();
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, signing ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS,
                   static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, options.stall_bytes_per_second);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.stall_seconds);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "dl-train");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  const std::string range = std::to_string(sink.start) + "-";
  if (sink.start > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  if (signing) {
    // Signed at the attempt's time (S3 refuses a request more than 15 minutes off); the Range
    // libcurl adds is not signed, which S3 allows.
    SigV4Request request;
    request.host = s3->host;
    request.path = s3->path;
    request.time = std::time(nullptr);
    SigV4Key key;
    key.region = s3->region;
    key.access_key = s3->access_key;
    key.secret_key = s3->secret_key;
    key.session_token = s3->session_token;
    try {
      for (const auto& [name, value] : sign_sigv4(request, key).headers) {
        headers = curl_slist_append(headers, (name + ": " + value).c_str());
      }
    } catch (...) {
      curl_slist_free_all(headers);
      curl_easy_cleanup(curl);
      throw;
    }
  }
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  Attempt a;
  a.rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
  a.error = error[0] != '\0' ? error : curl_easy_strerror(a.rc);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return a;
}

}  // namespace

RemoteObject fetch_object(const std::string& url, const RemoteOptions& options) {
  init_curl();
  S3Request s3;
  const bool is_s3 = url.rfind("s3://", 0) == 0;
  if (is_s3) s3 = s3_request(url, aws_environment());
  const std::string http_url = is_s3 ? s3.url : url;
  const int fd = memfd_create("dl-remote-object", MFD_CLOEXEC);
  if (fd < 0) throw DataError(url + ": cannot make a memory file: " + std::strerror(errno));
  Sink sink;
  sink.fd = fd;
  sink.max_bytes = options.max_bytes;
  const int tries = std::max(1, options.tries);
  for (int t = 1;; ++t) {
    Attempt a;
    try {
      a = attempt(http_url, is_s3 ? &s3 : nullptr, options, sink);
    } catch (...) {
      close(fd);
      throw;
    }
    // By value, so that a MissingData stays one when thrown.
    auto give_up = [&](auto error) {
      close(fd);
      throw error;
    };
    if (sink.too_large) {
      give_up(DataError(url + ": more than " + std::to_string(options.max_bytes) +
                        " bytes, the most a shard may have"));
    }
    if (sink.write_failed) give_up(DataError(url + ": out of memory for the download"));
    const bool body = a.status == 200 || a.status == 206;
    if (a.rc == CURLE_OK && body) {
      const std::uint64_t size = sink.start + sink.written;
      // An attempt that got further than the one that finished (a 200 after a drop) left bytes
      // past the object's end.
      if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        give_up(DataError(url + ": out of memory for the download"));
      }
      return RemoteObject{fd, size};
    }
    if (a.status == 404) give_up(MissingData(url + ": " + status_text(404)));
    if (a.status == 403) {
      give_up(DataError(
          url + ": " + status_text(403) +
          (is_s3 ? ": check the AWS credentials, the region and the bucket's policy" : "")));
    }
    std::string what;
    bool retry = false;
    if (a.rc == CURLE_OK && a.status == 416 && sink.start > 0) {
      what = "HTTP 416 (range not satisfiable)";
      retry = true;
      sink.start = 0;
    } else if (a.rc == CURLE_OK) {
      what = status_text(a.status);
      retry = a.status >= 500 || a.status == 429;
    } else {
      what = a.error;
      retry = transient(a.rc);
    }
    if (body && sink.keep) sink.start += sink.written;  // resume where the drop left off
    if (!retry) give_up(DataError(url + ": " + what));
    if (t >= tries) {
      give_up(DataError(url + ": " + what + " (after " + std::to_string(tries) + " tries)"));
    }
    const double wait = retry_wait_seconds(t + 1, options.backoff_seconds);
    if (options.warn) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2g", wait);
      options.warn(url + ": " + what + ", try " + std::to_string(t + 1) + " of " +
                   std::to_string(tries) + " in " + seconds + " s");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

bool remote_reads_available() {
  return true;
}

#else  // no libcurl

RemoteObject fetch_object(const std::string& url, const RemoteOptions&) {
  throw DataError(url +
                  ": this build has no libcurl, so it reads no http(s):// or s3:// data; "
                  "copy the shards to a local folder and give that path");
}

bool remote_reads_available() {
  return false;
}

#endif

std::string fetch_text(const std::string& url, const RemoteOptions& options) {
  RemoteOptions small = options;
  small.max_bytes = std::min<std::uint64_t>(options.max_bytes, std::uint64_t{16} << 20);
  const RemoteObject object = fetch_object(url, small);
  std::string text(static_cast<std::size_t>(object.size), '\0');
  const bool read = read_fully_at(object.fd, 0, text.data(), text.size());
  close(object.fd);
  if (!read) throw DataError(url + ": the download could not be read back");
  return text;
}

}  // namespace dl::data
