// s3:// URLs as HTTP requests (see s3_request.h).
#include "data/s3_request.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <tuple>
#include <utility>

#include "core/text.h"
#include "data/data_error.h"

extern char** environ;

namespace dl::data {
namespace {

std::string get(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// The `key = value` pairs of section `section` of an INI file as the AWS tools write them
// (empty when the file or the section is not there).
std::map<std::string, std::string> ini_section(const std::string& path,
                                               const std::string& section) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[' && t.back() == ']') {
      inside = trim(t.substr(1, t.size() - 2)) == section;
      continue;
    }
    const std::size_t eq = t.find('=');
    if (inside && eq != std::string::npos) out[trim(t.substr(0, eq))] = trim(t.substr(eq + 1));
  }
  return out;
}

// An endpoint URL's authority as the Host header carries it (libcurl leaves out the scheme's
// default port) and its own path ("" or "/prefix"). Without a scheme, libcurl guesses http.
std::pair<std::string, std::string> endpoint_host_and_path(const std::string& endpoint) {
  const std::size_t sep = endpoint.find("://");
  std::string scheme = sep == std::string::npos ? "http" : endpoint.substr(0, sep);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string rest = sep == std::string::npos ? endpoint : endpoint.substr(sep + 3);
  const std::size_t slash = rest.find('/');
  std::string host = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? std::string() : rest.substr(slash);
  const std::string default_port = scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
  if (!default_port.empty() && host.size() > default_port.size() &&
      host.compare(host.size() - default_port.size(), default_port.size(), default_port) == 0) {
    host.resize(host.size() - default_port.size());
  }
  return {host, path};
}

// A bucket becomes part of a host name (bucket.s3.REGION.amazonaws.com) or of a path: letters,
// digits, '.', '-' and '_' only (S3's rules, with the legacy names' capitals and underscores), so
// that no '@', '#', '?', ':' or '/' of an s3:// URL from a remote shard list can send a signed
// request to another host.
bool valid_bucket(const std::string& bucket) {
  if (bucket.empty() || bucket.size() > 255) return false;
  return std::all_of(bucket.begin(), bucket.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  });
}

// botocore's rule for a region name (validate_region_name): it becomes part of a host name.
bool valid_region(const std::string& region) {
  if (region.empty() || region.size() > 63) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return alnum(region.front()) && alnum(region.back()) &&
         std::all_of(region.begin(), region.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// Credentials go into HTTP headers: a control character (a CR or LF would add a header) is
// refused rather than sent.
void check_header_value(const std::string& value, const std::string& name,
                        const std::string& from) {
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      throw DataError("AWS credentials (" + from + "): " + name +
                      " holds a control character; expected printable text");
    }
  }
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    // ASCII only, whatever the locale says is alphanumeric.
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += ch;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

S3Request s3_request(const std::string& s3_url, const std::map<std::string, std::string>& env) {
  const std::string rest = s3_url.rfind("s3://", 0) == 0 ? s3_url.substr(5) : s3_url;
  const std::size_t slash = rest.find('/');
  if (slash == 0 || slash == std::string::npos || slash + 1 >= rest.size()) {
    throw DataError(printable(s3_url, 200) + ": expected s3://BUCKET/KEY");
  }
  const std::string bucket = rest.substr(0, slash);
  const std::string key = rest.substr(slash + 1);
  if (!valid_bucket(bucket)) {
    throw DataError(printable(s3_url, 200) +
                    ": expected a bucket name of letters, digits, '.', '-' and '_'");
  }

  const std::string home = get(env, "HOME");
  const std::string profile = get(env, "AWS_PROFILE").empty() ? "default" : get(env, "AWS_PROFILE");
  std::string config_file = get(env, "AWS_CONFIG_FILE");
  if (config_file.empty() && !home.empty()) config_file = home + "/.aws/config";
  std::string credentials_file = get(env, "AWS_SHARED_CREDENTIALS_FILE");
  if (credentials_file.empty() && !home.empty()) credentials_file = home + "/.aws/credentials";

  S3Request r;
  std::string region_from = "AWS_REGION";
  r.region = get(env, "AWS_REGION");
  if (r.region.empty()) {
    region_from = "AWS_DEFAULT_REGION";
    r.region = get(env, "AWS_DEFAULT_REGION");
  }
  if (r.region.empty() && !config_file.empty()) {
    // The config file names profiles "[profile x]", except the default one.
    region_from = config_file;
    r.region = get(ini_section(config_file, profile == "default" ? profile : "profile " + profile),
                   "region");
  }
  if (r.region.empty()) r.region = "us-east-1";
  if (!valid_region(r.region)) {
    throw DataError("AWS region '" + printable(r.region, 80) + "' (from " +
                    printable(region_from, 200) +
                    "): expected letters, digits and '-', as in eu-west-1");
  }

  r.access_key = get(env, "AWS_ACCESS_KEY_ID");
  r.secret_key = get(env, "AWS_SECRET_ACCESS_KEY");
  r.session_token = get(env, "AWS_SESSION_TOKEN");
  std::string credentials_from = "the AWS_* variables";
  if ((r.access_key.empty() || r.secret_key.empty()) && !credentials_file.empty()) {
    const auto creds = ini_section(credentials_file, profile);
    r.access_key = get(creds, "aws_access_key_id");
    r.secret_key = get(creds, "aws_secret_access_key");
    r.session_token = get(creds, "aws_session_token");
    credentials_from = printable(credentials_file, 200);
  }
  check_header_value(r.access_key, "the access key id", credentials_from);
  check_header_value(r.secret_key, "the secret access key", credentials_from);
  check_header_value(r.session_token, "the session token", credentials_from);
  // Half a key pair signs nothing: the request goes unsigned (a public bucket) instead.
  if (r.access_key.empty() || r.secret_key.empty()) {
    r.access_key.clear();
    r.secret_key.clear();
  }

  std::string endpoint = get(env, "AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = get(env, "AWS_ENDPOINT_URL");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (endpoint.empty()) {
    r.host = bucket + ".s3." + r.region + ".amazonaws.com";
    r.path = "/" + key;
    r.url = "https://" + r.host + uri_encode(r.path, true);
  } else {
    std::string prefix;
    std::tie(r.host, prefix) = endpoint_host_and_path(endpoint);
    r.path = prefix + "/" + bucket + "/" + key;
    r.url = endpoint + "/" + bucket + "/" + uri_encode(key, true);
  }
  return r;
}

std::map<std::string, std::string> aws_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (name.rfind("AWS_", 0) == 0 || name == "HOME") env[name] = entry.substr(eq + 1);
  }
  return env;
}

}  // namespace dl::data
