// Fuzzes the gateway's request head as a session reads it: raw bytes into RequestParser with
// the session's limits (a raised 256 KiB header limit, so a field can outgrow what Beast can
// store), fed in two reads; then PrepareRequest (target parsing, percent-decoding, routing,
// key checks) and the body through the buffer_body reader, chunked framing included. Nothing
// may throw, crash, leak or hang, and every error body and echoed field rendered from the
// request must be well-formed XML and a clean log field.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oc/common/check.h"
#include "oc/common/log.h"
#include "oc/common/utf8.h"
#include "oc/gateway/options.h"
#include "request_parser.h"
#include "s3/s3_errors.h"
#include "s3/s3_xml.h"

namespace {

namespace gw = oc::gateway;

void CheckXml(const std::string& document) {
  OC_CHECK(oc::IsValidUtf8(document));
  OC_CHECK(gw::ParseXml(document).has_value());
}

// The error body the session would send, with every request-derived field set.
void RenderAll(const gw::Request& req, const gw::Response* bad) {
  const std::string resource = req.Resource();
  gw::ErrorDetails details;
  details.resource = resource;
  details.request_id = "0123456789ABCDEF";
  if (bad != nullptr && bad->error) {
    details.message = bad->error_message;
    details.argument_name = bad->error_field;
    details.argument_value = bad->error_value;
    CheckXml(gw::RenderErrorXml(*bad->error, details));
  }
  for (const auto& [name, value] : req.headers) {
    details.argument_name = name;
    details.argument_value = value;
    CheckXml(gw::RenderErrorXml(gw::S3Error::kInvalidArgument, details));
  }
  gw::XmlWriter xml;
  xml.OpenRoot("ListBucketResult");
  xml.Element("Name", req.route.bucket);
  xml.Element("Key", req.route.key);
  for (const auto& [name, value] : req.parsed.query) {
    xml.Element("Prefix", name);
    xml.Element("Marker", value);
  }
  xml.Close("ListBucketResult");
  CheckXml(std::move(xml).Finish());
  for (const char c : oc::LogField(req.route.bucket)) {
    OC_CHECK(c > 0x20 && c < 0x7F);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gw::GatewayOptions options;
  options.max_header_bytes = 256 << 10;
  gw::RequestParser parser(options.max_header_bytes, options.max_object_bytes);
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte chooses where the first read ends, as TCP segments would; bytes the parser
  // did not take wait in `pending` as they would in the session's buffer.
  const size_t split = size == 0 ? 0 : std::min<size_t>(data[0], size);
  std::string pending;
  boost::beast::error_code ec;
  for (std::string_view read : {in.substr(0, split), in.substr(split)}) {
    pending.append(read);
    while (!pending.empty() && !parser.is_header_done()) {
      const size_t n = parser.put(boost::asio::buffer(pending), ec);
      pending.erase(0, n);
      if (ec == boost::beast::http::error::need_more) {
        ec = {};
        break;
      }
      if (ec) {
        return 0;  // the session answers 400 (or RequestHeaderSectionTooLarge) and closes
      }
    }
  }
  if (!parser.is_header_done()) {
    return 0;
  }
  gw::Request req;
  std::optional<gw::Response> bad = gw::PrepareRequest(parser, "s3.example", &req);
  RenderAll(req, bad ? &*bad : nullptr);
  // The body, in bounded pieces as ReadPiece reads it.
  char piece[4096];
  std::string_view rest = pending;
  while (!parser.is_done() && !rest.empty()) {
    auto& body = parser.get().body();
    body.data = piece;
    body.size = sizeof(piece);
    const size_t n = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    rest.remove_prefix(n);
    if (ec == boost::beast::http::error::need_buffer && n > 0) {
      ec = {};
      continue;
    }
    if (ec || n == 0) {
      break;
    }
  }
  return 0;
}
