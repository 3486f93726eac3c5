// Over 600 lines: the codec's round trips and one case per rejected wire field, side by side.
#include "oc/descriptor/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "descriptor_samples.h"

namespace oc::descriptor {
namespace {

std::vector<HeaderField> View(const HeaderList& list) {
  std::vector<HeaderField> out;
  for (const auto& [name, value] : list) {
    out.push_back({name, value});
  }
  return out;
}

// Parses "name: value" lines into a HeaderList, as a test's way of writing headers.
HeaderList Lines(std::initializer_list<std::pair<std::string, std::string>> pairs) {
  return HeaderList(pairs);
}

HeaderList MinimalHeaders() {
  return Lines({{"x-oc-version", "1"},
                {"x-oc-chunk-hashes", "000102030405060708090a0b0c0d0e0f"},
                {"x-oc-num-layers", "32"},
                {"x-oc-chunk-tokens", "256"},
                {"x-oc-layer-bytes", "1048576"}});
}

Result<Descriptor> DecodeList(const HeaderList& list, const Limits& limits = {}) {
  return DecodeHeaders(View(list), limits);
}

TEST(Codec, RoundTripsHeadersAndBodyForBothKeyForms) {
  struct Row {
    std::string_view name;
    Descriptor d;
  };
  for (const Row& row :
       {Row{"compact 1", samples::Compact(1)}, Row{"compact 200", samples::Compact(200)},
        Row{"explicit 1", samples::Explicit(1)}, Row{"explicit 150", samples::Explicit(150)},
        Row{"full", samples::Full(3)}, Row{"no prefix", [] {
                                             Descriptor d = samples::Compact(2);
                                             std::get<CompactKeys>(d.keys).prefix.clear();
                                             return d;
                                           }()}}) {
    SCOPED_TRACE(row.name);
    ASSERT_TRUE(Validate(row.d, Limits{}).ok());
    Result<Descriptor> from_headers = DecodeList(EncodeHeaders(row.d));
    ASSERT_TRUE(from_headers.has_value()) << from_headers.error();
    EXPECT_EQ(*from_headers, row.d);
    const std::string body = EncodeBody(row.d);
    Result<Descriptor> from_body = DecodeBody(body, Limits{});
    ASSERT_TRUE(from_body.has_value()) << from_body.error();
    EXPECT_EQ(*from_body, row.d);
  }
}

TEST(Codec, EncodesTheDocumentedHeaders) {
  Descriptor d = samples::Full(2);
  std::get<CompactKeys>(d.keys).prefix = "kv/a b,c%";
  const HeaderList h = EncodeHeaders(d);
  const HeaderList want = Lines({
      {"x-oc-version", "1"},
      {"x-oc-key-prefix", "kv/a%20b%2Cc%25"},
      {"x-oc-chunk-hashes", "00112233445566778899aabbccddeeff,8394a5b6c7d8e9fa0b1c2d3e4f607182"},
      {"x-oc-num-layers", "32"},
      {"x-oc-chunk-tokens", "256"},
      {"x-oc-layer-bytes", "1048576"},
      {"x-oc-layout", "kv_2ltd"},
      {"x-oc-delivery", "chunk-major"},
      {"x-oc-target-connection", "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"},
      {"x-oc-target-rkey", "ff10"},
      {"x-oc-target-address", "139637976731648"},
      {"x-oc-target-length", "67108864"},
      {"x-oc-compute-window-us", "850"},
      {"x-oc-request-id", "req-0001"},
  });
  EXPECT_EQ(h, want);
  EXPECT_EQ(HeaderBytes(h), [&] {
    uint64_t n = 0;
    for (const auto& [k, v] : want) {
      n += k.size() + v.size() + 4;
    }
    return n;
  }());
}

TEST(Codec, BodySplitsKeyListsOverLines) {
  const Descriptor d = samples::Compact(kBodyKeysPerLine * 2 + 1);
  const std::string body = EncodeBody(d);
  size_t lines = 0;
  for (size_t at = body.find("x-oc-chunk-hashes: "); at != std::string::npos;
       at = body.find("x-oc-chunk-hashes: ", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u);
}

TEST(Codec, DecodesHandWrittenVariants) {
  // Names in any case, OWS, CRLF, blank lines, repeated key lines, empty list elements,
  // uppercase hex, defaults for layout and delivery.
  const std::string body =
      "\r\n"
      "X-OC-Version: 1\r\n"
      "  x-oc-chunk-hashes :000102030405060708090A0B0C0D0E0F, \r\n"
      "x-oc-chunk-hashes:\t,101112131415161718191a1b1c1d1e1f ,\r\n"
      "\r\n"
      "x-oc-num-layers: 2\n"
      "x-oc-chunk-tokens: 16\n"
      "x-oc-layer-bytes: 64\n";
  Result<Descriptor> d = DecodeBody(body, Limits{});
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(d->num_chunks(), 2u);
  EXPECT_EQ(d->ObjectName(0), "000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(d->ObjectName(1), "101112131415161718191a1b1c1d1e1f");
  EXPECT_EQ(d->layout, StoredLayout::kL2TD);
  EXPECT_EQ(d->delivery, Delivery::kLayerMajor);
  EXPECT_FALSE(d->target.has_value());
  EXPECT_FALSE(d->compute_window_us.has_value());
  EXPECT_TRUE(Validate(*d, Limits{}).ok());
}

TEST(Codec, HeadersIgnoreOtherHeadersAndJoinRepeatedKeyLists) {
  HeaderList h = Lines({{"Host", "localhost"},
                        {"X-Oc-Version", "1"},
                        {"Authorization", "AWS4-HMAC-SHA256 ..."},
                        {"x-oc-chunk-names", "a,b%2Cc"},
                        {"X-OC-CHUNK-NAMES", "d"},
                        {"x-oc-num-layers", "1"},
                        {"x-oc-chunk-tokens", "1"},
                        {"x-oc-layer-bytes", "2"},
                        {"x-oc-LAYOUT", "KV_2LTD"},
                        {"x-oc-delivery", "Chunk-Major"}});
  Result<Descriptor> d = DecodeList(h);
  ASSERT_TRUE(d.has_value()) << d.error();
  EXPECT_EQ(std::get<ExplicitKeys>(d->keys).names, (std::vector<std::string>{"a", "b,c", "d"}));
  EXPECT_EQ(d->layout, StoredLayout::k2LTD);
  EXPECT_EQ(d->delivery, Delivery::kChunkMajor);
}

TEST(Codec, ExplicitNamesCarryAnyByte) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) {
    every_byte.push_back(static_cast<char>(b));
  }
  Descriptor d = samples::Explicit(0);
  d.keys = ExplicitKeys{{every_byte, "plain", "with space", "comma,", "percent%41", "ü"}};
  const HeaderList h = EncodeHeaders(d);
  for (const auto& [name, value] : h) {
    for (const char c : value) {
      EXPECT_TRUE(c >= 0x21 && c <= 0x7e) << name;  // header-safe
    }
  }
  Result<Descriptor> back = DecodeList(h);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, d);
  // The decoder takes lowercase %xx too, and raw visible ASCII other than ',' and '%'.
  HeaderList raw = MinimalHeaders();
  raw[1] = {"x-oc-chunk-names", "a%2fb%c3%BC,!\"#$&'()*+;<=>?[\\]^`{|}"};
  Result<Descriptor> r = DecodeList(raw);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(std::get<ExplicitKeys>(r->keys).names,
            (std::vector<std::string>{"a/b\xc3\xbc", "!\"#$&'()*+;<=>?[\\]^`{|}"}));
}

struct ErrorRow {
  std::string_view what;
  std::vector<std::pair<std::string, std::string>> changes;  // set (or add) these headers
  std::vector<std::string> removes;                          // then drop these
  std::string_view field;
};

HeaderList Apply(const ErrorRow& row) {
  HeaderList h = MinimalHeaders();
  for (const auto& [name, value] : row.changes) {
    bool found = false;
    for (auto& [n, v] : h) {
      if (n == name) {
        v = value;
        found = true;
      }
    }
    if (!found) {
      h.emplace_back(name, value);
    }
  }
  for (const std::string& name : row.removes) {
    std::erase_if(h, [&](const auto& p) { return p.first == name; });
  }
  return h;
}

TEST(Codec, EveryDecodeErrorNamesItsField) {
  const std::string hash = "000102030405060708090a0b0c0d0e0f";
  const std::vector<ErrorRow> rows = {
      {"missing version", {}, {"x-oc-version"}, "x-oc-version"},
      {"version 2", {{"x-oc-version", "2"}}, {}, "x-oc-version"},
      {"version 1.0", {{"x-oc-version", "1.0"}}, {}, "x-oc-version"},
      {"version 2 with unknown fields",
       {{"x-oc-version", "2"}, {"x-oc-new", "x"}},
       {},
       "x-oc-version"},
      {"unknown field", {{"x-oc-chunk-hash", hash}}, {}, "x-oc-chunk-hash"},
      {"duplicate single field", {}, {}, "x-oc-num-layers"},
      {"no keys", {}, {"x-oc-chunk-hashes"}, "x-oc-chunk-hashes"},
      {"empty key list", {{"x-oc-chunk-hashes", " , ,"}}, {}, "x-oc-chunk-hashes"},
      {"both key forms", {{"x-oc-chunk-names", "a"}}, {}, "x-oc-chunk-names"},
      {"prefix with names",
       {{"x-oc-chunk-names", "a"}, {"x-oc-key-prefix", "p/"}},
       {"x-oc-chunk-hashes"},
       "x-oc-key-prefix"},
      {"short hash", {{"x-oc-chunk-hashes", hash.substr(2)}}, {}, "x-oc-chunk-hashes"},
      {"long hash", {{"x-oc-chunk-hashes", hash + "00"}}, {}, "x-oc-chunk-hashes"},
      {"non-hex hash", {{"x-oc-chunk-hashes", "g" + hash.substr(1)}}, {}, "x-oc-chunk-hashes"},
      {"bad percent", {{"x-oc-chunk-names", "a%2"}}, {"x-oc-chunk-hashes"}, "x-oc-chunk-names"},
      {"bad percent hex",
       {{"x-oc-chunk-names", "a%zz"}},
       {"x-oc-chunk-hashes"},
       "x-oc-chunk-names"},
      {"raw space in name",
       {{"x-oc-chunk-names", "a b"}},
       {"x-oc-chunk-hashes"},
       "x-oc-chunk-names"},
      {"raw utf-8 in name",
       {{"x-oc-chunk-names", "\xc3\xbc"}},
       {"x-oc-chunk-hashes"},
       "x-oc-chunk-names"},
      {"name too long",
       {{"x-oc-chunk-names", std::string(1025, 'a')}},
       {"x-oc-chunk-hashes"},
       "x-oc-chunk-names"},
      {"encoded name too long",
       {{"x-oc-chunk-names", std::string(1024, 'a') + "%41"}},
       {"x-oc-chunk-hashes"},
       "x-oc-chunk-names"},
      {"prefix too long",
       {{"x-oc-key-prefix", std::string(1024 - 31, 'p')}},
       {},
       "x-oc-key-prefix"},
      {"bad prefix", {{"x-oc-key-prefix", "a b"}}, {}, "x-oc-key-prefix"},
      {"missing layers", {}, {"x-oc-num-layers"}, "x-oc-num-layers"},
      {"negative layers", {{"x-oc-num-layers", "-1"}}, {}, "x-oc-num-layers"},
      {"layers not a number", {{"x-oc-num-layers", "32x"}}, {}, "x-oc-num-layers"},
      {"layers past 32 bits", {{"x-oc-num-layers", "4294967296"}}, {}, "x-oc-num-layers"},
      {"missing tokens", {}, {"x-oc-chunk-tokens"}, "x-oc-chunk-tokens"},
      {"empty tokens", {{"x-oc-chunk-tokens", ""}}, {}, "x-oc-chunk-tokens"},
      {"missing layer bytes", {}, {"x-oc-layer-bytes"}, "x-oc-layer-bytes"},
      {"layer bytes past 64 bits",
       {{"x-oc-layer-bytes", "18446744073709551616"}},
       {},
       "x-oc-layer-bytes"},
      {"layer bytes 30 digits",
       {{"x-oc-layer-bytes", std::string(30, '1')}},
       {},
       "x-oc-layer-bytes"},
      {"unknown layout", {{"x-oc-layout", "kv_lt2d"}}, {}, "x-oc-layout"},
      {"unknown delivery", {{"x-oc-delivery", "layerwise"}}, {}, "x-oc-delivery"},
      {"target without rkey",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff"},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-rkey"},
      {"target without length",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff"},
        {"x-oc-target-rkey", "00"},
        {"x-oc-target-address", "1"}},
       {},
       "x-oc-target-length"},
      {"short connection id",
       {{"x-oc-target-connection", "00112233445566778899aabbccddee"},
        {"x-oc-target-rkey", "00"},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-connection"},
      {"long connection id",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff00"},
        {"x-oc-target-rkey", "00"},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-connection"},
      {"non-hex connection id",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeefg"},
        {"x-oc-target-rkey", "00"},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-connection"},
      {"non-hex rkey",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff"},
        {"x-oc-target-rkey", "0x"},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-rkey"},
      {"rkey too long",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff"},
        {"x-oc-target-rkey", std::string(2 * 8192 + 2, 'a')},
        {"x-oc-target-address", "1"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-rkey"},
      {"hex address",
       {{"x-oc-target-connection", "00112233445566778899aabbccddeeff"},
        {"x-oc-target-rkey", "00"},
        {"x-oc-target-address", "0x10"},
        {"x-oc-target-length", "1"}},
       {},
       "x-oc-target-address"},
      {"bad window", {{"x-oc-compute-window-us", "1.5"}}, {}, "x-oc-compute-window-us"},
      {"request id with space", {{"x-oc-request-id", "a b"}}, {}, "x-oc-request-id"},
      {"request id too long", {{"x-oc-request-id", std::string(129, 'r')}}, {}, "x-oc-request-id"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.what);
    HeaderList h = Apply(row);
    if (row.what == "duplicate single field") {
      h.emplace_back("X-OC-NUM-LAYERS", "3");
    }
    Result<Descriptor> d = DecodeList(h);
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(d.error().subject(), Subject::kDescriptor);
    EXPECT_EQ(d.error().field(), row.field) << d.error();
    EXPECT_FALSE(d.error().message().empty());
    // The same lines as a body fail the same way.
    std::string body;
    for (const auto& [name, value] : h) {
      body += name + ": " + value + "\n";
    }
    Result<Descriptor> b = DecodeBody(body, Limits{});
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().field(), row.field) << b.error();
  }
}

// docs/protocol.md: after the version, the first offending field in request order is named,
// in headers and in a POST body alike.
TEST(Codec, TheFirstOffendingFieldInRequestOrderIsNamed) {
  struct Row {
    std::string_view what;
    HeaderList extra;  // appended to MinimalHeaders, in this order
    std::string_view field;
  };
  for (const Row& row : {
           Row{"unknown before a repeated version",
               {{"x-oc-bogus", "1"}, {"x-oc-version", "1"}},
               "x-oc-bogus"},
           Row{"repeated version before an unknown",
               {{"x-oc-version", "1"}, {"x-oc-bogus", "1"}},
               "x-oc-version"},
           Row{"unknown before a repeated field",
               {{"x-oc-bogus", "1"}, {"x-oc-num-layers", "3"}},
               "x-oc-bogus"},
           Row{"repeated field before an unknown",
               {{"x-oc-num-layers", "3"}, {"x-oc-bogus", "1"}},
               "x-oc-num-layers"},
       }) {
    SCOPED_TRACE(row.what);
    HeaderList h = MinimalHeaders();
    h.insert(h.end(), row.extra.begin(), row.extra.end());
    Result<Descriptor> d = DecodeList(h);
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().field(), row.field) << d.error();
    std::string body;
    for (const auto& [name, value] : h) {
      body += name + ": " + value + "\n";
    }
    Result<Descriptor> b = DecodeBody(body, Limits{});
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().field(), row.field) << b.error();
  }
  // In a body, a line without ':' is an offender in its place too.
  const std::string head = "x-oc-version: 1\n";
  Result<Descriptor> b = DecodeBody(head + "x-oc-bogus: 1\nno colon\n", Limits{});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field(), "x-oc-bogus") << b.error();
  b = DecodeBody(head + "no colon\nx-oc-bogus: 1\n", Limits{});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field(), "body") << b.error();
  // A later version is still refused first, whatever follows.
  b = DecodeBody("x-oc-bogus: 1\nx-oc-version: 2\nx-oc-version: 1\n", Limits{});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field(), "x-oc-version") << b.error();
}

// docs/protocol.md, the batch existence query: target fields are ignored, so a client may
// send the header set of its GET (even one the GET would refuse for its target).
TEST(Codec, TheProbeIgnoresTargetFields) {
  for (const HeaderList& target : {
           HeaderList{{"x-oc-target-connection", "00"}},  // incomplete
           HeaderList{{"x-oc-target-connection", "zz"},
                      {"x-oc-target-rkey", "00"},
                      {"x-oc-target-address", "1"},
                      {"x-oc-target-length", "1"}},  // bad hex, too short for N·L·S
           HeaderList{{"x-oc-target-connection", "00000000000000000000000000000000"},
                      {"x-oc-target-rkey", "00"},
                      {"x-oc-target-address", "1"},
                      {"x-oc-target-length", "1"}},  // well formed but too short
       }) {
    HeaderList h = MinimalHeaders();
    h.insert(h.end(), target.begin(), target.end());
    SCOPED_TRACE(h.back().first + ": " + h.back().second);
    Result<Descriptor> get = DecodeList(h);
    const bool get_ok = get.has_value() && Validate(*get, Limits{}).ok();
    EXPECT_FALSE(get_ok) << "the GET checks its target";
    Result<Descriptor> probe = DecodeHeaders(View(h), Limits{}, Purpose::kProbe);
    ASSERT_TRUE(probe.has_value()) << probe.error();
    EXPECT_FALSE(probe->target.has_value());
    EXPECT_TRUE(Validate(*probe, Limits{}).ok());
    std::string body;
    for (const auto& [name, value] : h) {
      body += name + ": " + value + "\n";
    }
    Result<Descriptor> from_body = DecodeBody(body, Limits{}, Purpose::kProbe);
    ASSERT_TRUE(from_body.has_value()) << from_body.error();
    EXPECT_EQ(*from_body, *probe);
  }
  // Unknown fields are still refused in a probe.
  HeaderList h = MinimalHeaders();
  h.emplace_back("x-oc-target-colour", "blue");
  Result<Descriptor> probe = DecodeHeaders(View(h), Limits{}, Purpose::kProbe);
  ASSERT_FALSE(probe.has_value());
  EXPECT_EQ(probe.error().field(), "x-oc-target-colour");
}

// docs/protocol.md, descriptor PUT: x-oc-layout is required (the bytes are stored in that
// order); GET and probe default it to kv_l2td.
TEST(Codec, APutRequiresTheLayout) {
  HeaderList h = MinimalHeaders();
  Result<Descriptor> put = DecodeHeaders(View(h), Limits{}, Purpose::kPut);
  ASSERT_FALSE(put.has_value());
  EXPECT_EQ(put.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(put.error().field(), "x-oc-layout") << put.error();
  Result<Descriptor> get = DecodeList(h);
  ASSERT_TRUE(get.has_value()) << get.error();
  EXPECT_EQ(get->layout, StoredLayout::kL2TD);
  h.emplace_back("x-oc-layout", "kv_2ltd");
  put = DecodeHeaders(View(h), Limits{}, Purpose::kPut);
  ASSERT_TRUE(put.has_value()) << put.error();
  EXPECT_EQ(put->layout, StoredLayout::k2LTD);
  // The encoders always write it, so liboc_client's PUTs carry it.
  const Descriptor d = samples::Compact(3);
  EXPECT_TRUE(DecodeHeaders(View(EncodeHeaders(d)), Limits{}, Purpose::kPut).has_value());
  EXPECT_TRUE(DecodeBody(EncodeBody(d), Limits{}, Purpose::kPut).has_value());
}

// docs/protocol.md, "Descriptor PUT: create if absent": x-oc-if-none-match: * on a PUT only,
// in headers and body alike; any other value, or the field on a GET or probe, is refused
// naming it.
TEST(Codec, IfNoneMatchIsAPutOnlyFieldTakingOnlyAStar) {
  Descriptor d = samples::Compact(3);
  d.if_none_match = true;
  Result<Descriptor> from_headers = DecodeHeaders(View(EncodeHeaders(d)), Limits{}, Purpose::kPut);
  ASSERT_TRUE(from_headers.has_value()) << from_headers.error();
  EXPECT_EQ(*from_headers, d);
  Result<Descriptor> from_body = DecodeBody(EncodeBody(d), Limits{}, Purpose::kPut);
  ASSERT_TRUE(from_body.has_value()) << from_body.error();
  EXPECT_TRUE(from_body->if_none_match);
  // Absent unless set: the encoders write nothing for a plain PUT.
  for (const auto& [name, value] : EncodeHeaders(samples::Compact(3))) {
    EXPECT_NE(name, "x-oc-if-none-match");
  }
  struct Row {
    std::string_view what;
    std::string value;
    Purpose purpose;
    std::string_view message;
  };
  for (const Row& row : {Row{"etag", "\"abc\"", Purpose::kPut, "takes only *"},
                         Row{"empty", "", Purpose::kPut, "takes only *"},
                         Row{"get", "*", Purpose::kGet, "applies only to a descriptor PUT"},
                         Row{"probe", "*", Purpose::kProbe, "applies only to a descriptor PUT"}}) {
    SCOPED_TRACE(row.what);
    HeaderList h = MinimalHeaders();
    h.emplace_back("x-oc-layout", "kv_l2td");
    h.emplace_back("X-OC-If-None-Match", row.value);
    Result<Descriptor> r = DecodeHeaders(View(h), Limits{}, row.purpose);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.error().field(), "x-oc-if-none-match");
    EXPECT_EQ(r.error().message(), row.message);
  }
  HeaderList twice = MinimalHeaders();
  twice.emplace_back("x-oc-layout", "kv_l2td");
  twice.emplace_back("x-oc-if-none-match", "*");
  twice.emplace_back("x-oc-if-none-match", "*");
  Result<Descriptor> r = DecodeHeaders(View(twice), Limits{}, Purpose::kPut);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field(), "x-oc-if-none-match");
}

TEST(Codec, UnsupportedVersionSaysWhichVersionIsSpoken) {
  HeaderList h = MinimalHeaders();
  h[0].second = "2";
  Result<Descriptor> d = DecodeList(h);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message(), "unsupported version '2'; this server speaks version 1");
}

TEST(Codec, BodyErrors) {
  struct Row {
    std::string_view what;
    std::string body;
    std::string_view field;
  };
  const std::string head = "x-oc-version: 1\n";
  for (const Row& row : {
           Row{"line without colon", head + "x-oc-num-layers 3\n", "body"},
           Row{"non x-oc field", head + "host: example\n", "host"},
           Row{"empty body", "", "x-oc-version"},
           Row{"only blank lines", "\n\r\n  \n", "x-oc-version"},
       }) {
    SCOPED_TRACE(row.what);
    Result<Descriptor> d = DecodeBody(row.body, Limits{});
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().field(), row.field) << d.error();
  }
}

TEST(Codec, SizeLimitsAreCheckedBeforeParsing) {
  Limits small;
  small.max_header_bytes = 200;
  small.max_body_bytes = 300;
  small.max_chunks = 4;
  const Descriptor five = samples::Compact(5);

  // Headers over max_header_bytes: refused naming the header that crossed the limit.
  Result<Descriptor> h = DecodeList(EncodeHeaders(five), small);
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().field(), "x-oc-chunk-hashes");
  EXPECT_NE(h.error().message().find("POST"), std::string_view::npos);

  // Body over max_body_bytes.
  Result<Descriptor> b = DecodeBody(EncodeBody(five), small);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().field(), "body");

  // Within the byte limits but more keys than max_chunks: refused while counting, before
  // the vector is built.
  small.max_header_bytes = 1 << 20;
  small.max_body_bytes = 1 << 20;
  for (const Descriptor& d : {samples::Compact(5), samples::Explicit(5)}) {
    Result<Descriptor> r = DecodeBody(EncodeBody(d), small);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), d.compact() ? "x-oc-chunk-hashes" : "x-oc-chunk-names");
    EXPECT_TRUE(DecodeBody(EncodeBody(samples::Compact(4)), small).has_value());
  }

  // Empty list elements are skipped, not counted as keys.
  HeaderList many = MinimalHeaders();
  many[1].second = std::string(100000, ',') + many[1].second;
  EXPECT_TRUE(DecodeList(many, Limits{.max_header_bytes = 1 << 20}).has_value());

  // The key limit is configurable: max_key_bytes shrinks what names may be.
  Limits short_keys;
  short_keys.max_key_bytes = 40;
  Result<Descriptor> e = DecodeList(EncodeHeaders(samples::Explicit(1)), short_keys);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().field(), "x-oc-chunk-names");
}

TEST(Codec, ObjectNamesOfBothForms) {
  const Descriptor c = samples::Compact(3);
  EXPECT_EQ(c.ObjectName(1), "kv/llama3-8b/8394a5b6c7d8e9fa0b1c2d3e4f607182");
  const Descriptor e = samples::Explicit(3);
  EXPECT_EQ(e.ObjectName(1),
            "meta-llama/Llama-3.1-8B@1@0@8394a5b6c7d8e9fa0b1c2d3e4f607182@bfloat16");
  EXPECT_EQ(c.num_chunks(), 3u);
  EXPECT_EQ(e.num_chunks(), 3u);
}

TEST(Codec, ResponseSummaryRoundTrips) {
  ResponseSummary s;
  s.matched_chunks = 17;
  s.mode = ServeMode::kLayerwise;
  s.request_id = "9f2c41";
  s.storage_us = 1200;
  const HeaderList h = EncodeResponse(s);
  EXPECT_EQ(h, (HeaderList{{"x-oc-version", "1"},
                           {"x-oc-matched-chunks", "17"},
                           {"x-oc-mode", "layerwise"},
                           {"x-oc-request-id", "9f2c41"},
                           {"x-oc-storage-us", "1200"}}));
  Result<ResponseSummary> back = DecodeResponse(View(h));
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, s);

  struct Row {
    std::string_view what;
    HeaderList headers;
    std::string_view field;
  };
  for (const Row& row : {
           Row{"no version",
               {{"x-oc-matched-chunks", "1"}, {"x-oc-mode", "chunkwise"}},
               "x-oc-version"},
           Row{"no count",
               {{"x-oc-version", "1"}, {"x-oc-mode", "chunkwise"}},
               "x-oc-matched-chunks"},
           Row{"bad mode",
               {{"x-oc-version", "1"}, {"x-oc-matched-chunks", "1"}, {"x-oc-mode", "fast"}},
               "x-oc-mode"},
           Row{"bad timing",
               {{"x-oc-version", "1"},
                {"x-oc-matched-chunks", "1"},
                {"x-oc-mode", "chunkwise"},
                {"x-oc-gateway-us", "-3"}},
               "x-oc-gateway-us"},
       }) {
    SCOPED_TRACE(row.what);
    Result<ResponseSummary> r = DecodeResponse(View(row.headers));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().field(), row.field);
  }
}

}  // namespace
}  // namespace oc::descriptor
