// The data-plane wire format (docs/protocol.md, "Data plane" and "Data plane: connecting"):
// every message round-trips, matches the bytes the protocol document gives, and a decoder
// refuses every header that is not one (wrong size, magic, version, or a field out of range)
// with kCorruption. Pure bytes: no UCX here.

#include "oc/descriptor/data_plane_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "oc/common/bytes.h"

namespace oc::descriptor {
namespace {

// One byte of a good message changed: what it breaks.
struct Corrupt {
  const char* what;
  size_t index;
  uint8_t value;
};

// Every row of `rows` applied to `good` must be refused by `decode` with kCorruption, and so
// must `good` one byte short and one byte long.
template <size_t N, typename Decode>
void ExpectRefused(const std::array<std::byte, N>& good, std::initializer_list<Corrupt> rows,
                   Decode&& decode) {
  ASSERT_TRUE(decode(ByteSpan(good)).has_value());
  for (const Corrupt& row : rows) {
    SCOPED_TRACE(row.what);
    auto bad = good;
    bad[row.index] = static_cast<std::byte>(row.value);
    auto r = decode(ByteSpan(bad));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kCorruption);
  }
  std::vector<std::byte> longer(good.begin(), good.end());
  longer.push_back(std::byte{0});
  for (ByteSpan wrong_size : {ByteSpan(good).first(N - 1), ByteSpan(longer), ByteSpan()}) {
    SCOPED_TRACE(wrong_size.size());
    auto r = decode(wrong_size);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kCorruption);
  }
}

// --------------------------------------------------------------------------------------
// Notifications.

TEST(DataPlaneWire, NotificationsRoundTrip) {
  struct Row {
    const char* what;
    Notification n;
  };
  for (const Row& row :
       {Row{"layer-ready", {NotificationKind::kLayerReady, Code::kOk, 0x7f00'1234'5678ull, 31, 0}},
        Row{"done", {NotificationKind::kDone, Code::kOk, 1, 32, 0}},
        Row{"error", {NotificationKind::kError, Code::kNotFound, ~0ull, 0, 17}},
        Row{"longest error",
            {NotificationKind::kError, Code::kInternal, 0, 0, kMaxErrorMessageBytes}}}) {
    SCOPED_TRACE(row.what);
    const auto bytes = EncodeNotification(row.n);
    auto back = DecodeNotification(bytes);
    ASSERT_TRUE(back.has_value()) << back.error();
    EXPECT_EQ(back->kind, row.n.kind);
    EXPECT_EQ(back->code, row.n.code);
    EXPECT_EQ(back->request_key, row.n.request_key);
    EXPECT_EQ(back->layer, row.n.layer);
    EXPECT_EQ(back->message_bytes, row.n.message_bytes);
  }
}

TEST(DataPlaneWire, KnownAnswerMatchesTheProtocolDocument) {
  // docs/protocol.md, "Data plane": layer-ready for layer 3 of the request at 0x10.
  Notification n;
  n.kind = NotificationKind::kLayerReady;
  n.request_key = 0x10;
  n.layer = 3;
  EXPECT_EQ(HexEncode(EncodeNotification(n)),
            "4f434450"
            "01"
            "01"
            "00"
            "00"
            "1000000000000000"
            "03000000"
            "00000000");
}

TEST(DataPlaneWire, MalformedHeadersAreRejected) {
  Notification n;
  n.kind = NotificationKind::kError;
  n.code = Code::kInternal;
  n.message_bytes = 5;
  ExpectRefused(EncodeNotification(n),
                {{"magic", 0, 'X'},
                 {"magic, last byte", 3, 'D'},
                 {"version", 4, 2},
                 {"version 0", 4, 0},
                 {"kind 0", 5, 0},
                 {"kind 4", 5, 4},
                 {"code past the enum", 6, 200},
                 {"error without a code", 6, 0},
                 {"message too long", 21, 0x10}},
                [](ByteSpan b) { return DecodeNotification(b); });
  // Only errors carry a code and text.
  n.kind = NotificationKind::kDone;
  n.code = Code::kOk;
  n.message_bytes = 3;
  EXPECT_FALSE(DecodeNotification(EncodeNotification(n)).has_value());
  n.message_bytes = 0;
  auto done = EncodeNotification(n);
  ASSERT_TRUE(DecodeNotification(done).has_value());
  done[6] = static_cast<std::byte>(Code::kNotFound);
  EXPECT_FALSE(DecodeNotification(done).has_value());
  // One byte past the longest message.
  n.kind = NotificationKind::kError;
  n.code = Code::kInternal;
  n.message_bytes = kMaxErrorMessageBytes + 1;
  EXPECT_FALSE(DecodeNotification(EncodeNotification(n)).has_value());
}

// --------------------------------------------------------------------------------------
// Rendezvous data header.

TEST(DataPlaneWire, DataHeaderRoundTripsAndMatchesItsLayout) {
  const DataHeader h{0x0102'0304'0506'0708ull, 0xa0b0'c0d0'e0f0'0011ull};
  const auto bytes = EncodeDataHeader(h);
  EXPECT_EQ(HexEncode(bytes),
            "4f434444"  // "OCDD"
            "01"
            "000000"
            "0807060504030201"
            "1100f0e0d0c0b0a0");
  auto back = DecodeDataHeader(bytes);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->request_key, h.request_key);
  EXPECT_EQ(back->offset, h.offset);
}

TEST(DataPlaneWire, MalformedDataHeadersAreRejected) {
  ExpectRefused(EncodeDataHeader({1, 2}),
                {{"magic", 0, 'X'}, {"notification magic", 3, 'P'}, {"version", 4, 2}},
                [](ByteSpan b) { return DecodeDataHeader(b); });
  // A notification is not a data header, nor the other way round.
  EXPECT_FALSE(DecodeDataHeader(EncodeNotification(Notification{})).has_value());
  EXPECT_FALSE(DecodeNotification(EncodeDataHeader({1, 2})).has_value());
}

// --------------------------------------------------------------------------------------
// Handshake.

TEST(DataPlaneWire, HelloAndWelcomeRoundTripAndMatchTheirLayout) {
  HelloSecret secret;
  for (size_t i = 0; i < secret.size(); ++i) {
    secret[i] = static_cast<std::byte>(i);
  }
  const auto hello = EncodeHello(secret);
  EXPECT_EQ(HexEncode(ByteSpan(hello).first(8)), "4f43484901000000");  // "OCHI", version 1
  auto back = DecodeHello(hello);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, secret);
  ConnectionId id;
  for (size_t i = 0; i < id.size(); ++i) {
    id[i] = static_cast<std::byte>(0xa0 + i);
  }
  const auto welcome = EncodeWelcome(id);
  EXPECT_EQ(HexEncode(welcome), "4f43574501000000a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  auto id_back = DecodeWelcome(welcome);
  ASSERT_TRUE(id_back.has_value());
  EXPECT_EQ(*id_back, id);
}

TEST(DataPlaneWire, MalformedHellosAndWelcomesAreRejected) {
  ExpectRefused(EncodeHello(HelloSecret{}),
                {{"magic", 0, 'X'}, {"welcome magic", 2, 'W'}, {"version", 4, 2}},
                [](ByteSpan b) { return DecodeHello(b); });
  ExpectRefused(EncodeWelcome(ConnectionId{}),
                {{"magic", 0, 'X'}, {"hello magic", 2, 'H'}, {"version", 4, 0}},
                [](ByteSpan b) { return DecodeWelcome(b); });
  // Each is refused as the other.
  EXPECT_FALSE(DecodeWelcome(EncodeHello(HelloSecret{})).has_value());
  EXPECT_FALSE(DecodeHello(EncodeWelcome(ConnectionId{})).has_value());
}

}  // namespace
}  // namespace oc::descriptor
