// The server's op table (server_connection.h) and the calls answered by one reply frame:
// ServeUnary serves every call of calls.h's UnaryCalls (decode the request, run the Store
// method on the store pool, answer with its Status or Result), ServeStats adds the server's
// own figures to the store's. The streamed calls are in server_object_streams.cc and
// server_kv_calls.cc.
#include <fmt/core.h>

#include "rpc/calls.h"
#include "rpc/server_connection.h"

namespace oc::storage::rpc {

namespace asio = boost::asio;

namespace {

constexpr size_t Index(Op op) { return static_cast<uint8_t>(op); }

}  // namespace

template <typename C>
asio::awaitable<bool> Connection::ServeUnary(const FrameHeader& h) {
  typename C::Request request;
  if (Status d = DecodeRequest(body(), &request); !d.ok()) {
    co_return co_await Reject(h.request_id, d);
  }
  const typename C::Return r = co_await OnPool([&] { return C::Run(*server_.store, request); });
  co_return co_await Answer(h.op, h.request_id, r);
}

asio::awaitable<bool> Connection::ServeStats(const FrameHeader& h) {
  StatsCall::Request request;
  if (Status d = DecodeRequest(body(), &request); !d.ok()) {
    co_return co_await Reject(h.request_id, d);
  }
  Result<StoreStats> stats =
      co_await OnPool([&] { return StatsCall::Run(*server_.store, request); });
  if (!stats.has_value()) {
    co_return co_await SendError(h.request_id, stats.error());
  }
  for (auto& figure : server_.Figures()) {
    stats->figures.push_back(std::move(figure));
  }
  co_return co_await Reply(Op::kStats, h.request_id, *stats);
}

template <typename... Calls>
void Connection::AddUnary(HandlerTable& table, CallList<Calls...>) {
  ((table[Index(Calls::op)] = &Connection::ServeUnary<Calls>), ...);
}

// Every op a client may open a call with. The others (replies, data and end frames, Hello
// after the handshake) have no handler and are a protocol error here.
const Connection::HandlerTable& Connection::Handlers() {
  static const HandlerTable table = [] {
    HandlerTable t{};
    AddUnary(t, UnaryCalls{});
    t[Index(Op::kStats)] = &Connection::ServeStats;
    t[Index(Op::kPutBegin)] = &Connection::ServeOpenWrite<PutBeginCall>;
    t[Index(Op::kUploadPartBegin)] = &Connection::ServeOpenWrite<UploadPartBeginCall>;
    t[Index(Op::kGet)] = &Connection::ServeGet;
    t[Index(Op::kKvProbe)] = &Connection::ServeKvProbe;
    t[Index(Op::kKvGetLayers)] = &Connection::ServeKvGetLayers;
    t[Index(Op::kKvPutChunks)] = &Connection::ServeKvPutChunks;
    return t;
  }();
  return table;
}

asio::awaitable<bool> Connection::Dispatch(const FrameHeader& h) {
  const Handler handler = Handlers()[Index(h.op)];
  if (handler == nullptr) {
    co_return co_await Reject(
        h.request_id, Status::InvalidArgument("op", fmt::format("{} is not a call", OpName(h.op))));
  }
  co_return co_await (this->*handler)(h);
}

}  // namespace oc::storage::rpc
