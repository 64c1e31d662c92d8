// AWS Signature Version 4 over OpenSSL's libcrypto (see s3_sign.h).
#include "data/s3_sign.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <ctime>

#include "data/data_error.h"
#include "data/s3_request.h"

namespace dl::data {
namespace {

using Digest = std::array<unsigned char, 32>;

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

Digest hmac(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
           &n) == nullptr ||
      n != out.size()) {
    throw DataError("libcrypto could not compute an HMAC-SHA256 to sign an S3 request");
  }
  return out;
}

std::string_view view(const Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

std::string lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// A header value as signed: spaces and tabs around it dropped, each inner run of them one space.
std::string canonical_value(const std::string& value) {
  std::string out;
  bool space = false;
  for (const char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Digest out{};
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &n, EVP_sha256(), nullptr) != 1 ||
      n != out.size()) {
    throw DataError("libcrypto could not compute a SHA-256 to sign an S3 request");
  }
  return hex(out.data(), out.size());
}

SigV4Signature sign_sigv4(const SigV4Request& request, const SigV4Key& key) {
  char stamp[17] = {0};
  std::tm utc{};
  if (gmtime_r(&request.time, &utc) == nullptr ||
      std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc) != 16) {
    throw DataError("cannot sign an S3 request: its time is out of range");
  }
  const std::string amz_date = stamp;
  const std::string date = amz_date.substr(0, 8);

  // The headers signed: the caller's, then host and the x-amz-* ones this adds.
  HeaderList added = {{"x-amz-date", amz_date}};
  if (request.content_sha256_header)
    added.emplace_back("x-amz-content-sha256", request.payload_sha256);
  if (!key.session_token.empty()) added.emplace_back("x-amz-security-token", key.session_token);
  HeaderList all;
  for (const auto& [name, value] : request.headers) {
    all.emplace_back(lower(canonical_value(name)), canonical_value(value));
  }
  all.emplace_back("host", request.host);
  all.insert(all.end(), added.begin(), added.end());
  // By name only, so that a repeated header's values keep their order.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers;
  std::string signed_headers;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0 && all[i].first == all[i - 1].first) {
      canonical_headers.back() = ',';  // the previous line's '\n'
    } else {
      canonical_headers += all[i].first + ":";
      signed_headers += (signed_headers.empty() ? "" : ";") + all[i].first;
    }
    canonical_headers += all[i].second + "\n";
  }

  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : request.query)
    query.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [k, v] : query) {
    canonical_query += (canonical_query.empty() ? "" : "&") + k + "=" + v;
  }

  SigV4Signature out;
  out.canonical_request = request.method + "\n" +
                          uri_encode(request.path.empty() ? "/" : request.path, true) + "\n" +
                          canonical_query + "\n" + canonical_headers + "\n" + signed_headers +
                          "\n" + request.payload_sha256;
  const std::string scope = date + "/" + key.region + "/" + key.service + "/aws4_request";
  out.string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(out.canonical_request);
  const Digest signing_key = hmac(
      view(hmac(view(hmac(view(hmac("AWS4" + key.secret_key, date)), key.region)), key.service)),
      "aws4_request");
  const Digest signature = hmac(view(signing_key), out.string_to_sign);
  out.headers.emplace_back("Authorization",
                           "AWS4-HMAC-SHA256 Credential=" + key.access_key + "/" + scope +
                               ", SignedHeaders=" + signed_headers +
                               ", Signature=" + hex(signature.data(), signature.size()));
  out.headers.insert(out.headers.end(), added.begin(), added.end());
  return out;
}

}  // namespace dl::data
