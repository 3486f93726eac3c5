// liboc_client's requests as the gateway sees them: a loopback listener records each request
// the client really sends (its own Beast transport, its own SigV4 signing) and the gateway's
// verifier (gateway/src/auth, Authenticator::Authenticate) checks it. Also the mapping of S3
// error answers to Status.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "auth/credentials.h"
#include "auth/sigv4.h"
#include "oc/client/client.h"
#include "oc/descriptor/chunk_key.h"
#include "oc/sigv4/crypto.h"

namespace oc::client {
namespace {

namespace auth = oc::gateway::auth;

struct Captured {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Accepts one connection and answers every request on it "200, empty body", recording it.
class Recorder {
 public:
  Recorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Recorder() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Captured> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    const int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) {
      return;
    }
    std::string buf;
    char piece[65536];
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::read(conn, piece, sizeof(piece));
        if (n <= 0) {
          ::close(conn);
          return;
        }
        buf.append(piece, static_cast<size_t>(n));
      }
      Captured c;
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      size_t line_end = head.find("\r\n");
      std::string first = head.substr(0, line_end);
      c.method = first.substr(0, first.find(' '));
      c.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
      size_t content_length = 0;
      while (line_end != std::string::npos) {
        const size_t next = head.find("\r\n", line_end + 2);
        std::string line = head.substr(
            line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
        const size_t colon = line.find(':');
        std::string name = line.substr(0, colon);
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') {
          value.erase(0, 1);
        }
        if (name == "content-length" || name == "Content-Length") {
          content_length = std::stoul(value);
        }
        c.headers.emplace_back(name, value);
        line_end = next;
      }
      while (buf.size() < content_length) {
        const ssize_t n = ::read(conn, piece, sizeof(piece));
        if (n <= 0) {
          ::close(conn);
          return;
        }
        buf.append(piece, static_cast<size_t>(n));
      }
      c.body = buf.substr(0, content_length);
      buf.erase(0, content_length);
      {
        std::lock_guard lock(mu_);
        requests_.push_back(std::move(c));
      }
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      if (::write(conn, reply.data(), reply.size()) < 0) {
        ::close(conn);
        return;
      }
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Captured> requests_;
};

Result<auth::AuthResult> Verify(const auth::Authenticator& a, const Captured& c) {
  auth::RequestView view;
  view.method = c.method;
  view.target = c.target;
  for (const auto& [n, v] : c.headers) {
    view.headers.emplace_back(n, v);
  }
  return a.Authenticate(view, std::chrono::system_clock::now());
}

descriptor::Descriptor TwoChunks() {
  descriptor::Descriptor d;
  descriptor::ChunkHash h{};
  h[0] = std::byte{0xab};
  d.keys = descriptor::CompactKeys{"llama 3/ü,", {h, h}};
  d.num_layers = 2;
  d.chunk_tokens = 4;
  d.layer_bytes = 6;
  return d;
}

TEST(ClientSigning, GatewayVerifierAcceptsEveryRequestKind) {
  const auth::User user = auth::Credentials::Generate("alice");
  Result<auth::Credentials> creds = auth::Credentials::FromUsers({user});
  ASSERT_TRUE(creds.has_value()) << creds.error();
  const auth::Authenticator verifier(*creds, auth::AuthOptions{});

  struct Row {
    std::string name;
    bool sign_payload;
  };
  for (const Row& row : {Row{"unsigned payload", false}, Row{"signed payload", true}}) {
    SCOPED_TRACE(row.name);
    Recorder rec;
    ClientOptions options;
    options.endpoint = rec.endpoint();
    options.access_key = user.access_key;
    options.secret_key = user.secret_key;
    options.sign_payload = row.sign_payload;
    Result<std::unique_ptr<Client>> c = Client::Open(options);
    ASSERT_TRUE(c.has_value()) << c.error();
    ASSERT_TRUE((*c)->CreateBucket("kv").ok());
    ASSERT_TRUE((*c)->PutObject("kv", "dir/a b+c=ü~.bin", AsBytes("hello")).ok());
    std::byte out[16];
    Result<uint64_t> got = (*c)->GetObject("kv", "dir/x", MutableByteSpan(out), 3, 5);
    ASSERT_TRUE(got.has_value()) << got.error();
    EXPECT_EQ(*got, 0u);
    const std::string chunks(24, 'k');
    Result<PutChunksResult> put = (*c)->PutChunks("kv", TwoChunks(), AsBytes(chunks));
    ASSERT_TRUE(put.has_value()) << put.error();

    const std::vector<Captured> reqs = rec.requests();
    ASSERT_EQ(reqs.size(), 4u);
    EXPECT_EQ(reqs[1].target, "/kv/dir/a%20b%2Bc%3D%C3%BC~.bin");
    EXPECT_EQ(reqs[3].target, "/kv?objectcache");
    EXPECT_EQ(reqs[3].body, chunks);
    for (const Captured& r : reqs) {
      SCOPED_TRACE(r.method + " " + r.target);
      Result<auth::AuthResult> ok = Verify(verifier, r);
      ASSERT_TRUE(ok.has_value()) << ok.error();
      ASSERT_NE(ok->user, nullptr);
      EXPECT_EQ(ok->user->name, "alice");
      EXPECT_EQ(ok->payload,
                row.sign_payload ? auth::PayloadMode::kSigned : auth::PayloadMode::kUnsigned);
      if (row.sign_payload) {
        EXPECT_TRUE(auth::CheckPayloadSha256(*ok, sigv4::Sha256Of(r.body)).ok());
      }
      // Every x-oc-* header is signed, so none can be changed in flight.
      for (const auto& [n, v] : r.headers) {
        if (n.starts_with("x-oc-")) {
          Captured tampered = r;
          for (auto& [tn, tv] : tampered.headers) {
            if (tn == n) {
              tv += "0";
            }
          }
          Result<auth::AuthResult> bad = Verify(verifier, tampered);
          ASSERT_FALSE(bad.has_value()) << n;
          EXPECT_EQ(bad.error().code(), Code::kUnauthenticated) << n;
        }
      }
    }
  }
}

TEST(ClientSigning, WrongSecretFailsVerification) {
  const auth::User user = auth::Credentials::Generate("bob");
  Result<auth::Credentials> creds = auth::Credentials::FromUsers({user});
  ASSERT_TRUE(creds.has_value());
  const auth::Authenticator verifier(*creds, auth::AuthOptions{});
  Recorder rec;
  ClientOptions options;
  options.endpoint = rec.endpoint();
  options.access_key = user.access_key;
  options.secret_key = std::string(user.secret_key.size(), 'x');
  Result<std::unique_ptr<Client>> c = Client::Open(options);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE((*c)->PutObject("kv", "k", AsBytes("v")).ok());
  const std::vector<Captured> reqs = rec.requests();
  ASSERT_EQ(reqs.size(), 1u);
  Result<auth::AuthResult> r = Verify(verifier, reqs[0]);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kUnauthenticated);
  EXPECT_EQ(r.error().subject(), Subject::kSignature);
}

TEST(ClientErrors, S3AnswersBecomeTypedStatus) {
  struct Row {
    unsigned http;
    std::string body;
    std::string request_id;  // the x-amz-request-id header
    Code code;
    Subject subject;
    std::string field;
    std::string message;
    std::string s3_code;
    std::string want_request_id;
  };
  const Row rows[] = {
      {400,
       "<Error><Code>InvalidArgument</Code><Message>4096 is out of range 1..1024</Message>"
       "<ArgumentName>x-oc-num-layers</ArgumentName><RequestId>00aa</RequestId></Error>",
       "", Code::kInvalidArgument, Subject::kDescriptor, "x-oc-num-layers",
       "4096 is out of range 1..1024", "InvalidArgument", "00aa"},
      {404, "<Error><Code>NoSuchBucket</Code><Message>no &lt;kv&gt;</Message></Error>",
       "1f2e3d4c5b6a7980", Code::kNotFound, Subject::kBucket, "", "no <kv>", "NoSuchBucket",
       "1f2e3d4c5b6a7980"},
      {403, "<Error><Code>AccessDenied</Code><Message>m</Message><RequestId>body</RequestId>",
       "header", Code::kPermissionDenied, Subject::kNone, "", "m", "AccessDenied", "header"},
      {403, "<Error><Code>SignatureDoesNotMatch</Code><Message>m</Message></Error>", "",
       Code::kUnauthenticated, Subject::kSignature, "", "m", "SignatureDoesNotMatch", ""},
      {503, "", "", Code::kUnavailable, Subject::kNone, "", "", "HTTP503", ""},
      {500, "<Error><Code>InternalError</Code><Message>x</Message></Error>", "", Code::kInternal,
       Subject::kNone, "", "x", "InternalError", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    const Status s = StatusFromS3Response(row.http, row.body, row.request_id);
    EXPECT_EQ(s.code(), row.code);
    EXPECT_EQ(s.subject(), row.subject);
    EXPECT_EQ(s.field(), row.field);
    EXPECT_EQ(s.message(), row.message);
    const ErrorInfo* info = ErrorInfoOf(s);
    ASSERT_NE(info, nullptr) << s;
    EXPECT_EQ(info->s3_code, row.s3_code);
    EXPECT_EQ(info->http_status, row.http);
    EXPECT_EQ(info->request_id, row.want_request_id);
    EXPECT_FALSE(info->timed_out);
    // Copies keep it (a Status crosses threads and Results by value).
    const Status copy = s;
    ASSERT_NE(ErrorInfoOf(copy), nullptr);
    EXPECT_EQ(ErrorInfoOf(copy)->s3_code, row.s3_code);
    EXPECT_NE(s.ToString().find(row.s3_code + ", HTTP " + std::to_string(row.http)),
              std::string::npos)
        << s;
  }
}

TEST(ClientErrors, RefusedConnectionIsUnavailable) {
  ClientOptions options;
  {
    // A listener used once and closed: its port then refuses connections.
    Recorder other;
    options.endpoint = other.endpoint();
    Result<std::unique_ptr<Client>> c = Client::Open(options);
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE((*c)->CreateBucket("kv").ok());
  }
  Result<std::unique_ptr<Client>> c = Client::Open(options);
  ASSERT_TRUE(c.has_value());
  const Status s = (*c)->CreateBucket("kv");
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
}

}  // namespace
}  // namespace oc::client
