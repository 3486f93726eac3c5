// Fuzzes liboc_client's parsers of what a server answers (client/src/s3_answer.cc,
// descriptor_calls.cc, and the descriptor response headers of descriptor/codec.h). Byte 0
// chooses the parser, the rest is the answer:
//   0: an error body, with the HTTP status from the next two bytes (StatusFromS3Response)
//   1: a ListObjectsV2 page (ParseListObjectsV2)
//   2: a probe answer: the next byte is the descriptor's chunk count, then the
//      x-oc-matched-chunks value ("-" for none) and '\n', then the body (ParseProbeAnswer)
//   3: descriptor response headers, "name: value" lines (DecodeResponse)
// Properties beyond no crash: an error answer is never OK and names its status and class of
// status; a page, a probe answer and a response summary that parse survive a round trip
// through the text the gateway writes for them (escaped XML elements; one size or "-" per
// line; EncodeResponse) unchanged, and a probe answer has one size per chunk and at most that
// many matched.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client_impl.h"
#include "oc/client/client.h"
#include "oc/common/check.h"
#include "oc/descriptor/codec.h"

namespace {

namespace client = oc::client;

void ErrorAnswer(unsigned status, std::string_view body) {
  const oc::Status st = client::StatusFromS3Response(status, body);
  OC_CHECK(!st.ok());
  const client::ErrorInfo* info = client::ErrorInfoOf(st);
  OC_CHECK(info != nullptr && info->http_status == status && !info->s3_code.empty() &&
           !info->timed_out);
  if (status == 404) {
    OC_CHECK(st.code() == oc::Code::kNotFound);
  } else if (status >= 500) {
    OC_CHECK(st.code() == oc::Code::kInternal || st.code() == oc::Code::kUnimplemented ||
             st.code() == oc::Code::kUnavailable);
  }
}

std::string Escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// The page as the gateway writes it (gateway/src/handlers/bucket_handlers.cc).
std::string PageXml(const client::ListPage& page) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>";
  x += "<IsTruncated>" + std::string(page.truncated ? "true" : "false") + "</IsTruncated>";
  x += "<NextContinuationToken>" + Escaped(page.next_continuation_token) +
       "</NextContinuationToken>";
  for (const client::ObjectEntry& e : page.objects) {
    x += "<Contents><Key>" + Escaped(e.key) + "</Key><ETag>" + Escaped("\"" + e.etag + "\"") +
         "</ETag><Size>" + std::to_string(e.size) + "</Size></Contents>";
  }
  for (const std::string& p : page.common_prefixes) {
    x += "<CommonPrefixes><Prefix>" + Escaped(p) + "</Prefix></CommonPrefixes>";
  }
  return x + "</ListBucketResult>";
}

bool SamePage(const client::ListPage& a, const client::ListPage& b) {
  if (a.objects.size() != b.objects.size() || a.common_prefixes != b.common_prefixes ||
      a.truncated != b.truncated || a.next_continuation_token != b.next_continuation_token) {
    return false;
  }
  for (size_t i = 0; i < a.objects.size(); ++i) {
    if (a.objects[i].key != b.objects[i].key || a.objects[i].size != b.objects[i].size ||
        a.objects[i].etag != b.objects[i].etag) {
      return false;
    }
  }
  return true;
}

void ListPage(std::string_view xml) {
  const oc::Result<client::ListPage> page = client::ParseListObjectsV2(xml);
  if (!page.has_value()) {
    OC_CHECK(page.error().code() == oc::Code::kCorruption ||
             page.error().code() == oc::Code::kInvalidArgument);
    return;
  }
  const oc::Result<client::ListPage> back = client::ParseListObjectsV2(PageXml(*page));
  OC_CHECK(back.has_value() && SamePage(*page, *back));
}

void Probe(uint64_t chunks, std::string_view in) {
  const size_t nl = in.find('\n');
  const std::string matched(in.substr(0, nl));
  const std::string_view body = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  const oc::Result<client::ProbeResult> r =
      client::ParseProbeAnswer(matched == "-" ? nullptr : &matched, body, chunks);
  if (!r.has_value()) {
    return;
  }
  OC_CHECK(r->sizes.size() == chunks && r->matched <= chunks);
  std::string again;
  for (const std::optional<uint64_t>& s : r->sizes) {
    again += s ? std::to_string(*s) : std::string("-");
    again.push_back('\n');
  }
  const std::string m = std::to_string(r->matched);
  const oc::Result<client::ProbeResult> back = client::ParseProbeAnswer(&m, again, chunks);
  OC_CHECK(back.has_value() && back->matched == r->matched && back->sizes == r->sizes);
}

void ResponseHeaders(std::string_view in) {
  std::vector<oc::descriptor::HeaderField> fields;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    const std::string_view line = in.substr(0, nl);
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    const size_t colon = line.find(':');
    fields.push_back(
        colon == std::string_view::npos
            ? oc::descriptor::HeaderField{line, ""}
            : oc::descriptor::HeaderField{line.substr(0, colon), line.substr(colon + 1)});
  }
  const oc::Result<oc::descriptor::ResponseSummary> r = oc::descriptor::DecodeResponse(fields);
  if (!r.has_value()) {
    OC_CHECK(r.error().code() == oc::Code::kInvalidArgument);
    return;
  }
  const oc::descriptor::HeaderList list = oc::descriptor::EncodeResponse(*r);
  std::vector<oc::descriptor::HeaderField> view;
  for (const auto& [name, value] : list) {
    view.push_back({name, value});
  }
  const oc::Result<oc::descriptor::ResponseSummary> back = oc::descriptor::DecodeResponse(view);
  OC_CHECK(back.has_value() && *back == *r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) {
    return 0;
  }
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      ErrorAnswer(100 + (data[1] | (data[2] << 8)) % 500, in.substr(2));
      break;
    case 1:
      ListPage(in);
      break;
    case 2:
      Probe(data[1], in.substr(1));
      break;
    default:
      ResponseHeaders(in);
      break;
  }
  return 0;
}
