// Fuzzes how an s3:// URL becomes a request (s3_request): the URL (a remote shard list may name
// it), the AWS config and shared credentials files it reads (INI, as the AWS tools write them)
// and the profile. The input is four parts separated by NUL bytes: URL, profile, config file,
// credentials file. DataError is the documented refusal. An accepted request must stay where it
// was sent: the URL's host is the Host it signs (letters, digits, '.', '-', '_', no '@', '#', '?'
// or '/'), and no credential holds a byte that could break a header line.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "data/data_error.h"
#include "data/s3_request.h"
#include "fuzz_files.h"

namespace {

std::string next_part(const std::string& text, std::size_t& at) {
  const std::size_t end = text.find('\0', at);
  std::string part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  at = end == std::string::npos ? text.size() : end + 1;
  return part;
}

bool header_safe(const std::string& s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  const std::string url = next_part(text, at);
  const std::string profile = next_part(text, at);
  const std::string config = next_part(text, at);
  const std::string credentials = next_part(text, at);
  std::map<std::string, std::string> env = {
      {"AWS_CONFIG_FILE",
       dl::fuzz::write_input("config", reinterpret_cast<const std::uint8_t*>(config.data()),
                             config.size())},
      {"AWS_SHARED_CREDENTIALS_FILE",
       dl::fuzz::write_input("credentials",
                             reinterpret_cast<const std::uint8_t*>(credentials.data()),
                             credentials.size())}};
  if (!profile.empty()) env["AWS_PROFILE"] = profile;
  try {
    const dl::data::S3Request r = dl::data::s3_request(url, env);
    const std::string prefix = "https://" + r.host + "/";
    if (r.url.compare(0, prefix.size(), prefix) != 0) __builtin_trap();
    for (const char c : r.host) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
      if (!ok) __builtin_trap();
    }
    if (r.url != prefix + dl::data::uri_encode(r.path.substr(1), true)) __builtin_trap();
    if (!header_safe(r.access_key) || !header_safe(r.secret_key) || !header_safe(r.session_token) ||
        !header_safe(r.region)) {
      __builtin_trap();
    }
    if (r.access_key.empty() != r.secret_key.empty()) __builtin_trap();
    dl::fuzz::sink = static_cast<std::int64_t>(r.url.size() + r.access_key.size());
  } catch (const dl::data::DataError&) {
  }
  return 0;
}
