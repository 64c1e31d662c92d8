// The SigV4 signer (data/s3_sign.h) held to AWS's published vectors, copied as published, never
// computed here:
//  * the Signature Version 4 test suite (credentials AKIDEXAMPLE, service "service", us-east-1,
//    20150830T123600Z), as awslabs/aws-c-auth carries it in tests/aws-signing-test-suite/v4/<case>/
//    (request.txt, header-canonical-request.txt, header-signed-request.txt): the GET cases whose
//    rules are S3's (no path normalisation, one encoding);
//  * the S3 documentation's "GET Object" example (Authenticating Requests: Using the
//    Authorization Header, Signature Calculations for the Authorization Header), signature
//    f0e8bdb8...bdb41.
// Each vector also checks the canonical request, so a failure says which part went wrong; and the
// last test shows that one wrong byte anywhere changes the signature.
#include "data/s3_sign.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "data/s3_request.h"

namespace dl::test {
namespace {

using namespace dl::data;

constexpr const char* kSuiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

std::time_t utc(int year, int month, int day, int hour, int minute, int second) {
  std::tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  return timegm(&t);
}

// A GET of the test suite: example.amazonaws.com at 2015-08-30T12:36:00Z, no x-amz-content-sha256
// (the suite's "sign_body": false).
SigV4Request suite_request(const std::string& path) {
  SigV4Request r;
  r.host = "example.amazonaws.com";
  r.path = path;
  r.content_sha256_header = false;
  r.time = utc(2015, 8, 30, 12, 36, 0);
  return r;
}

SigV4Key suite_key() {
  SigV4Key k;
  k.region = "us-east-1";
  k.service = "service";
  k.access_key = "AKIDEXAMPLE";
  k.secret_key = kSuiteSecret;
  return k;
}

std::string header(const SigV4Signature& s, const std::string& name) {
  for (const auto& [n, v] : s.headers) {
    if (n == name) return v;
  }
  return "(none)";
}

// The canonical request of a suite case whose headers are host and x-amz-date only.
std::string plain_creq(const std::string& path, const std::string& query) {
  return "GET\n" + path + "\n" + query +
         "\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
}

std::string suite_authorization(const std::string& signed_headers, const std::string& signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
         "SignedHeaders=" +
         signed_headers + ", Signature=" + signature;
}

TEST(S3Sign, SuiteGetVanilla) {
  const SigV4Signature s = sign_sigv4(suite_request("/"), suite_key());
  EXPECT_EQ(s.canonical_request, plain_creq("/", ""));
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date",
                          "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
  EXPECT_EQ(header(s, "x-amz-date"), "20150830T123600Z");
  EXPECT_EQ(header(s, "x-amz-content-sha256"), "(none)");
  EXPECT_EQ(header(s, "x-amz-security-token"), "(none)");
  EXPECT_EQ(s.headers.size(), 2u);
}

TEST(S3Sign, SuiteGetVanillaQueryOrderKeyCase) {
  SigV4Request r = suite_request("/");
  r.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  const SigV4Signature s = sign_sigv4(r, suite_key());
  EXPECT_EQ(s.canonical_request, plain_creq("/", "Param1=value1&Param2=value2"));
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date",
                          "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
}

TEST(S3Sign, SuiteGetVanillaQueryOrderEncoded) {
  // GET /?Param-3=Value3&Param=Value2&%E1%88%B4=Value1: sorted by the encoded key, not the pair.
  SigV4Request r = suite_request("/");
  r.query = {{"Param-3", "Value3"}, {"Param", "Value2"}, {"\xE1\x88\xB4", "Value1"}};
  const SigV4Signature s = sign_sigv4(r, suite_key());
  EXPECT_EQ(s.canonical_request, plain_creq("/", "%E1%88%B4=Value1&Param=Value2&Param-3=Value3"));
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date",
                          "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"));
}

TEST(S3Sign, SuiteGetVanillaQueryUnreservedAndUtf8Query) {
  const std::string unreserved =
      "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  SigV4Request r = suite_request("/");
  r.query = {{unreserved, unreserved}};
  SigV4Signature s = sign_sigv4(r, suite_key());
  EXPECT_EQ(s.canonical_request, plain_creq("/", unreserved + "=" + unreserved));
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date",
                          "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"));
  r.query = {{"\xE1\x88\xB4", "bar"}};  // get-vanilla-utf8-query
  s = sign_sigv4(r, suite_key());
  EXPECT_EQ(s.canonical_request, plain_creq("/", "%E1%88%B4=bar"));
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date",
                          "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"));
}

TEST(S3Sign, SuitePathsAreEncodedOnceAndNotNormalised) {
  struct Case {
    const char* name;
    std::string path;
    std::string canonical;
    const char* signature;
  };
  const Case cases[] = {
      {"get-unreserved", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
       "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
       "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
      {"get-utf8", "/\xE1\x88\xB4", "/%E1%88%B4",
       "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
      {"get-space-unnormalized", "/example space/", "/example%20space/",
       "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
      {"get-slashes-unnormalized", "//example//", "//example//",
       "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5"},
      {"get-relative-unnormalized", "/example/..", "/example/..",
       "eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SigV4Signature s = sign_sigv4(suite_request(c.path), suite_key());
    EXPECT_EQ(s.canonical_request, plain_creq(c.canonical, ""));
    EXPECT_EQ(header(s, "Authorization"), suite_authorization("host;x-amz-date", c.signature));
  }
}

TEST(S3Sign, SuiteHeadersAreLowerCasedTrimmedSortedAndRepeatsJoined) {
  SigV4Request r = suite_request("/");
  r.headers = {{"My-Header1", " value1"},
               {"My-Header2", " \"a   b   c\""}};  // get-header-value-trim
  SigV4Signature s = sign_sigv4(r, suite_key());
  EXPECT_EQ(s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
            "x-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;my-header1;my-header2;x-amz-date",
                          "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"));
  r.headers = {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}};
  s = sign_sigv4(r, suite_key());  // get-header-key-duplicate
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;my-header1;x-amz-date",
                          "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"));
  r.headers = {{"My-Header1", "value4"},
               {"My-Header1", "value1"},
               {"My-Header1", "value3"},
               {"My-Header1", "value2"}};
  s = sign_sigv4(r, suite_key());  // get-header-value-order
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;my-header1;x-amz-date",
                          "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"));
}

TEST(S3Sign, SuiteGetVanillaWithSessionToken) {
  SigV4Key key = suite_key();
  key.session_token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
  const SigV4Signature s = sign_sigv4(suite_request("/"), key);
  EXPECT_EQ(s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n"
            "x-amz-security-token:"
            "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\n\n"
            "host;x-amz-date;x-amz-security-token\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(
      header(s, "Authorization"),
      suite_authorization("host;x-amz-date;x-amz-security-token",
                          "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"));
  EXPECT_EQ(header(s, "x-amz-security-token"), key.session_token);
}

// The S3 documentation's GET Object: the first 10 bytes of examplebucket's test.txt.
SigV4Request s3_get_object() {
  SigV4Request r;
  r.host = "examplebucket.s3.amazonaws.com";
  r.path = "/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  r.time = utc(2013, 5, 24, 0, 0, 0);
  return r;
}

SigV4Key s3_doc_key() {
  SigV4Key k;
  k.region = "us-east-1";
  k.access_key = "AKIAIOSFODNN7EXAMPLE";
  k.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return k;
}

TEST(S3Sign, S3DocumentationGetObject) {
  const SigV4Signature s = sign_sigv4(s3_get_object(), s3_doc_key());
  EXPECT_EQ(
      s.canonical_request,
      "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
      "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(header(s, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(header(s, "x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(header(s, "x-amz-content-sha256"), kEmptyPayloadSha256);
  ASSERT_EQ(s.headers.size(), 3u);
  EXPECT_EQ(s.headers[0].first, "Authorization");
}

TEST(S3Sign, Sha256OfTheEmptyBodyIsTheOneS3Names) {
  EXPECT_EQ(sha256_hex(""), kEmptyPayloadSha256);
}

// One wrong byte in any input, and the S3 example's signature is not the published one.
TEST(S3Sign, AWrongByteAnywhereChangesTheSignature) {
  const std::string published =
      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  ASSERT_NE(header(sign_sigv4(s3_get_object(), s3_doc_key()), "Authorization").find(published),
            std::string::npos);
  auto signs_otherwise = [&](const SigV4Request& r, const SigV4Key& k) {
    return header(sign_sigv4(r, k), "Authorization").find(published) == std::string::npos;
  };
  SigV4Key key = s3_doc_key();
  key.secret_key.back() = 'X';
  EXPECT_TRUE(signs_otherwise(s3_get_object(), key));
  key = s3_doc_key();
  key.region = "us-east-2";
  EXPECT_TRUE(signs_otherwise(s3_get_object(), key));
  key = s3_doc_key();
  key.session_token = "T";
  EXPECT_TRUE(signs_otherwise(s3_get_object(), key));
  SigV4Request r = s3_get_object();
  r.path = "/test.txu";
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
  r = s3_get_object();
  r.host = "examplebucket.s3.amazonaws.com:8080";
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
  r = s3_get_object();
  r.headers = {{"Range", "bytes=0-8"}};
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
  r = s3_get_object();
  r.time += 1;
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
  r = s3_get_object();
  r.method = "HEAD";
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
  r = s3_get_object();
  r.query = {{"versionId", "1"}};
  EXPECT_TRUE(signs_otherwise(r, s3_doc_key()));
}

// What remote_store signs for an s3:// URL: the Host libcurl sends and the path the URL encodes.
TEST(S3Sign, S3RequestGivesTheHostAndPathThatAreSigned) {
  std::map<std::string, std::string> env = {{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"},
                                            {"AWS_REGION", "eu-west-1"}};
  S3Request r = s3_request("s3://bucket/set/train 000+1.tar", env);
  EXPECT_EQ(r.host, "127.0.0.1:9000");
  EXPECT_EQ(r.path, "/bucket/set/train 000+1.tar");
  EXPECT_EQ(r.url, "http://127.0.0.1:9000" + uri_encode(r.path, true));
  env["AWS_ENDPOINT_URL"] = "https://store.example:443/s3";  // the default port is left out
  r = s3_request("s3://b/k", env);
  EXPECT_EQ(r.host, "store.example");
  EXPECT_EQ(r.path, "/s3/b/k");
  EXPECT_EQ(r.url, "https://store.example:443/s3/b/k");
  env.erase("AWS_ENDPOINT_URL");
  r = s3_request("s3://b/a~b/c d.tar", env);
  EXPECT_EQ(r.host, "b.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(r.path, "/a~b/c d.tar");
  EXPECT_EQ(r.url, "https://b.s3.eu-west-1.amazonaws.com/a~b/c%20d.tar");
  EXPECT_EQ(uri_encode("a/b c+\xE1", false), "a%2Fb%20c%2B%E1");
}

}  // namespace
}  // namespace dl::test
