// Where an s3:// URL is asked for and how the request is signed, from the standard AWS variables
// and files. Pure apart from reading the files the variables name.
//
// s3://bucket/key goes to the endpoint of AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path style,
// as S3-compatible stores want it), else to https://bucket.s3.REGION.amazonaws.com/key. The
// region is AWS_REGION, AWS_DEFAULT_REGION or the profile's `region` in the AWS config file
// (us-east-1 without one); the credentials AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with
// AWS_SESSION_TOKEN), else the profile (AWS_PROFILE, else `default`) of the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials). Without credentials requests go
// unsigned, which public buckets answer; with them each is signed as s3_sign.h says.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace dl::data {

// What an S3 URL becomes: the HTTP(S) URL to ask and how to sign for it.
struct S3Request {
  std::string url;
  // The URL's parts that are signed: the Host header libcurl sends for it (the port only where it
  // is not the scheme's default) and the path before percent-encoding (an endpoint's own path,
  // then /bucket/key; or /key on AWS), so that uri_encode(path, true) is the URL's path.
  std::string host;
  std::string path;
  std::string region;
  std::string access_key;  // empty: unsigned
  std::string secret_key;
  std::string session_token;
};

// The request for s3://bucket/key given the environment `env` (the variables above, and HOME to
// find ~/.aws) and the files it names. Throws DataError for a URL without a bucket or a key.
S3Request s3_request(const std::string& s3_url, const std::map<std::string, std::string>& env);

// `text` percent-encoded byte by byte (%XX, upper case), RFC 3986's unreserved characters left as
// they are, and '/' too where keep_slash: the S3 key in a URL's path, and SigV4's encoding.
std::string uri_encode(std::string_view text, bool keep_slash);

// The process environment as s3_request reads it.
std::map<std::string, std::string> aws_environment();

}  // namespace dl::data
