// AWS Signature Version 4 for one request, computed here (OpenSSL's libcrypto for SHA-256 and
// HMAC) rather than by libcurl, whose CURLOPT_AWS_SIGV4 needs 7.75 while the image has 7.68.
// A pure function: the request, its time and the keys in, the headers to add out.
//
// S3's rules (which the generic test suite's "unnormalized" cases share): the path is encoded
// once, byte by byte, with RFC 3986's unreserved characters and '/' left as they are, and never
// normalised ("//a/../b" is signed as it is sent); query keys and values are encoded the same way
// ('/' too) and sorted by key, then value; header names are lower-cased, values trimmed with inner
// runs of spaces made one, a repeated header's values joined with ',' in the order given, and the
// signed headers sorted by name.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dl::data {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// SHA-256 of no bytes: a GET's payload hash.
inline constexpr const char* kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct SigV4Request {
  std::string method = "GET";
  // The Host header as sent: the host, with ":port" where the port is not the scheme's default.
  std::string host;
  // The path as the server should read it, not yet percent-encoded ("/bucket/set/a b.tar").
  std::string path = "/";
  // Query parameters, not yet encoded (a key without '=' has an empty value).
  HeaderList query;
  // Other headers to sign (Range, Content-Type...), besides host and the x-amz-* ones added here.
  HeaderList headers;
  // Lower-case hex SHA-256 of the body, or "UNSIGNED-PAYLOAD".
  std::string payload_sha256 = kEmptyPayloadSha256;
  // Whether x-amz-content-sha256 is sent and signed: S3 requires it; other services (and AWS's
  // generic test suite) do without.
  bool content_sha256_header = true;
  // The request time, seconds since the epoch (UTC).
  std::time_t time = 0;
};

struct SigV4Key {
  std::string region;
  std::string service = "s3";
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty: none (else sent and signed as x-amz-security-token)
};

struct SigV4Signature {
  // The headers to add, in this order: Authorization, x-amz-date, x-amz-content-sha256 (where
  // content_sha256_header), x-amz-security-token (where there is a session token).
  HeaderList headers;
  // What was signed, for tests and for a 403's diagnosis.
  std::string canonical_request;
  std::string string_to_sign;
};

// Signs `request` with `key`. Throws DataError only if libcrypto fails.
SigV4Signature sign_sigv4(const SigV4Request& request, const SigV4Key& key);

// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace dl::data
