// Admission of descriptor GETs when every descriptor worker is busy
// (docs/decisions/many-clients-admission-queue.md), end to end in process: oc_gateway's Server over
// a local store with one descriptor worker, liboc_client over loopback and UCX on TCP. The worker
// is held by a task the test submits to the store's own executor, so the test decides when capacity
// frees; no timing is asserted.
//  - a full admission queue answers 503 SlowDown saying the queue is full, nothing delivered;
//  - a GET still queued at the admission timeout answers 503 SlowDown saying so;
//  - liboc_client retries SlowDown with backoff and succeeds byte-exact once capacity frees.
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "oc/client/client.h"
#include "oc/common/executor.h"
#include "oc/descriptor/descriptor.h"
#include "oc/gateway/server.h"
#include "oc/storage/open_store.h"
#include "oc/testutil/testutil.h"

namespace oc::client {
namespace {

using descriptor::Descriptor;

constexpr char kBucket[] = "kv-admission";
constexpr uint32_t kLayers = 4;
constexpr uint64_t kLayerBytes = 4096;

Descriptor Toy() {
  Descriptor d;
  d.keys = descriptor::ExplicitKeys{{"adm@1@0@h0@bfloat16", "adm@1@0@h1@bfloat16"}};
  d.num_layers = kLayers;
  d.chunk_tokens = 16;
  d.layer_bytes = kLayerBytes;
  return d;
}

// The layer-major payload of Toy()'s two chunks stored chunk-major as `chunks` (kv_l2td).
std::vector<std::byte> LayerMajor(const std::vector<std::byte>& chunks) {
  std::vector<std::byte> out(chunks.size());
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (uint64_t j = 0; j < 2; ++j) {
      std::memcpy(out.data() + (l * 2 + j) * kLayerBytes,
                  chunks.data() + (j * kLayers + l) * kLayerBytes, kLayerBytes);
    }
  }
  return out;
}

class AdmissionFixture : public ::testing::Test {
 protected:
  // One descriptor worker; `queue` GETs may wait for it up to `timeout`.
  void Start(uint32_t queue, std::chrono::milliseconds timeout) {
    storage::StoreOptions so;
    so.data_dir = (dir_.path() / "data").string();
    so.sync_writes = false;
    so.kv.data_plane_transports = "tcp";
    so.kv.descriptor_threads = 1;
    so.kv.admission_queue = queue;
    so.kv.admission_timeout = timeout;
    auto store = storage::OpenStore(so);
    ASSERT_TRUE(store.has_value()) << store.error();
    store_ = std::move(*store);
    gateway::GatewayOptions go;
    go.listen = "127.0.0.1:0";
    go.credentials_file = (dir_.path() / "credentials.toml").string();
    go.access_log = false;
    auto setup = gateway::EnsureCredentialsFile(go.credentials_file);
    ASSERT_TRUE(setup.has_value()) << setup.error();
    auto server = gateway::Server::Create(go, store_.get());
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    run_ = std::thread([this] { (void)server_->Run(); });
    options_.endpoint = "http://127.0.0.1:" + std::to_string(server_->port());
    options_.access_key = setup->access_key;
    options_.secret_key = setup->secret_key;
    options_.data_plane.transports = "tcp";
    client_ = Open(options_);
    ASSERT_TRUE(client_->CreateBucket(kBucket).ok());
    chunks_ = testutil::PatternBytes(11, 2 * kLayers * kLayerBytes);
    ASSERT_TRUE(client_->PutChunks(kBucket, Toy(), chunks_).has_value());
  }
  void TearDown() override {
    Release();
    client_.reset();
    if (server_ != nullptr) {
      server_->Stop();
      run_.join();
    }
  }

  static std::unique_ptr<Client> Open(const ClientOptions& o) {
    auto client = Client::Open(o);
    EXPECT_TRUE(client.has_value()) << client.error();
    return client.has_value() ? std::move(*client) : nullptr;
  }

  // Occupies the store's only descriptor worker until Release().
  void HoldTheWorker() {
    std::promise<void> started;
    std::shared_future<void> go = release_.get_future().share();
    const Status s = store_->descriptor_executor()->Submit([&started, go] {
      started.set_value();
      go.wait();
    });
    ASSERT_TRUE(s.ok()) << s;
    started.get_future().wait();
  }
  void Release() {
    if (!released_) {
      released_ = true;
      release_.set_value();
    }
  }

  // A descriptor GET into a fresh target over UCX; its bytes are checked when it succeeds.
  Status GetInto(Client& c, std::unique_ptr<TargetBuffer>* buffer) {
    auto plane = c.data_plane();
    if (!plane.has_value()) {
      return plane.error();
    }
    auto buf = (*plane)->Allocate(chunks_.size());
    if (!buf.has_value()) {
      return buf.error();
    }
    *buffer = std::move(*buf);
    auto h = c.GetLayers(kBucket, Toy(), **buffer);
    if (!h.has_value()) {
      return h.error();
    }
    Result<LayersResult> r = h->Wait();
    return r.has_value() ? Status::Ok() : r.error();
  }

  testutil::TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<gateway::Server> server_;
  std::thread run_;
  ClientOptions options_;
  std::unique_ptr<Client> client_;
  std::vector<std::byte> chunks_;
  std::promise<void> release_;
  bool released_ = false;
};

TEST_F(AdmissionFixture, AFullQueueAnswersSlowDownNamingTheQueueAndTheRetrySucceeds) {
  Start(/*queue=*/1, std::chrono::hours(1));
  HoldTheWorker();
  // The queue's one place taken by another waiting task (never expiring: no callback).
  std::promise<void> filler_ran;
  ASSERT_TRUE(store_->descriptor_executor()->Submit([&] { filler_ran.set_value(); }).ok());

  ClientOptions no_retry = options_;
  no_retry.slowdown_retry_budget = std::chrono::milliseconds(0);
  std::unique_ptr<Client> impatient = Open(no_retry);
  std::unique_ptr<TargetBuffer> refused_buffer;
  const Status refused = GetInto(*impatient, &refused_buffer);
  EXPECT_EQ(refused.code(), Code::kUnavailable) << refused;
  ASSERT_NE(ErrorInfoOf(refused), nullptr) << refused;
  EXPECT_EQ(ErrorInfoOf(refused)->s3_code, "SlowDown");
  EXPECT_EQ(ErrorInfoOf(refused)->http_status, 503u);
  EXPECT_EQ(ErrorInfoOf(refused)->request_id.size(), 16u) << refused;  // the gateway's id
  EXPECT_FALSE(ErrorInfoOf(refused)->timed_out);
  EXPECT_NE(refused.message().find("admission queue is full"), std::string_view::npos) << refused;
  EXPECT_EQ(impatient->slowdown_retries(), 0u);
  // Nothing was delivered into the refused target.
  EXPECT_EQ(refused_buffer->bytes()[0], std::byte{0});

  // A client that retries: refused while the queue stays full, in once capacity frees.
  std::unique_ptr<TargetBuffer> buffer;
  std::future<Status> got =
      std::async(std::launch::async, [&] { return GetInto(*client_, &buffer); });
  while (client_->slowdown_retries() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // until one SlowDown was retried
  }
  Release();
  const Status s = got.get();
  ASSERT_TRUE(s.ok()) << s;
  filler_ran.get_future().wait();
  EXPECT_GE(client_->slowdown_retries(), 1u);
  const std::vector<std::byte> want = LayerMajor(chunks_);
  EXPECT_EQ(std::memcmp(buffer->bytes().data(), want.data(), want.size()), 0);
}

TEST_F(AdmissionFixture, AQueuedGetPastItsDeadlineAnswersSlowDownSayingSo) {
  Start(/*queue=*/4, std::chrono::milliseconds(50));
  HoldTheWorker();
  ClientOptions no_retry = options_;
  no_retry.slowdown_retry_budget = std::chrono::milliseconds(0);
  std::unique_ptr<Client> impatient = Open(no_retry);
  std::unique_ptr<TargetBuffer> buffer;
  const Status expired = GetInto(*impatient, &buffer);  // queued, then dropped at 50 ms
  EXPECT_EQ(expired.code(), Code::kUnavailable) << expired;
  ASSERT_NE(ErrorInfoOf(expired), nullptr) << expired;
  EXPECT_EQ(ErrorInfoOf(expired)->s3_code, "SlowDown");
  EXPECT_EQ(ErrorInfoOf(expired)->http_status, 503u);
  EXPECT_EQ(ErrorInfoOf(expired)->request_id.size(), 16u) << expired;  // the gateway's id
  EXPECT_FALSE(ErrorInfoOf(expired)->timed_out);
  EXPECT_NE(expired.message().find("admission timeout"), std::string_view::npos) << expired;
  EXPECT_EQ(buffer->bytes()[0], std::byte{0});
  EXPECT_EQ(store_->descriptor_executor()->expired(), 1u);
}

// Waiting in the queue is admission, not refusal: a GET that finds the worker busy waits and
// completes once the worker frees, with no SlowDown answer at all.
TEST_F(AdmissionFixture, AQueuedGetRunsOnceTheWorkerFrees) {
  Start(/*queue=*/4, std::chrono::hours(1));
  HoldTheWorker();
  std::unique_ptr<TargetBuffer> buffer;
  std::future<Status> got =
      std::async(std::launch::async, [&] { return GetInto(*client_, &buffer); });
  while (store_->descriptor_executor()->queued() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // until the GET waits there
  }
  Release();
  const Status s = got.get();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(client_->slowdown_retries(), 0u);
  const std::vector<std::byte> want = LayerMajor(chunks_);
  EXPECT_EQ(std::memcmp(buffer->bytes().data(), want.data(), want.size()), 0);
}

// A wait that passes its bound says so as data (ErrorInfo::timed_out, no answer yet), and the
// request goes on: waiting again after the worker frees gets every layer.
TEST_F(AdmissionFixture, AWaitPastItsBoundIsTimedOutAndTheRequestGoesOn) {
  Start(/*queue=*/4, std::chrono::hours(1));
  HoldTheWorker();
  auto plane = client_->data_plane();
  ASSERT_TRUE(plane.has_value()) << plane.error();
  auto buffer = (*plane)->Allocate(chunks_.size());
  ASSERT_TRUE(buffer.has_value()) << buffer.error();
  auto h = client_->GetLayers(kBucket, Toy(), **buffer);
  ASSERT_TRUE(h.has_value()) << h.error();
  while (store_->descriptor_executor()->queued() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // until the GET waits there
  }
  // The worker is held: no layer can land, so both waits pass their bounds.
  const Status layer = h->WaitLayer(0, std::chrono::milliseconds(20));
  EXPECT_EQ(layer.code(), Code::kUnavailable) << layer;
  ASSERT_NE(ErrorInfoOf(layer), nullptr) << layer;
  EXPECT_TRUE(ErrorInfoOf(layer)->timed_out);
  EXPECT_EQ(ErrorInfoOf(layer)->http_status, 0u);  // no answer was received
  EXPECT_EQ(ErrorInfoOf(layer)->s3_code, "");
  Result<LayersResult> early = h->Wait(std::chrono::milliseconds(20));
  ASSERT_FALSE(early.has_value());
  ASSERT_NE(ErrorInfoOf(early.error()), nullptr) << early.error();
  EXPECT_TRUE(ErrorInfoOf(early.error())->timed_out);
  EXPECT_FALSE(h->done());
  Release();
  Result<LayersResult> end = h->Wait();
  ASSERT_TRUE(end.has_value()) << end.error();
  EXPECT_EQ(end->summary.matched_chunks, 2u);
  const std::vector<std::byte> want = LayerMajor(chunks_);
  EXPECT_EQ(std::memcmp((*buffer)->bytes().data(), want.data(), want.size()), 0);
}

TEST(ClientOptions, RetryBudgetAndBackoffCapAreChecked) {
  ClientOptions o;
  o.slowdown_retry_budget = std::chrono::milliseconds(-1);
  EXPECT_EQ(o.Validate().field(), "slowdown_retry_budget");
  o.slowdown_retry_budget = std::chrono::milliseconds(0);
  o.slowdown_backoff_cap = std::chrono::milliseconds(0);
  EXPECT_EQ(o.Validate().field(), "slowdown_backoff_cap");
}

}  // namespace
}  // namespace oc::client
