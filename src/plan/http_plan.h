#pragma once
// The probes of `uscope http`: Go net/http's server and client, as trace probes built in code and
// planned by plan_trace() like any other (one planner). Each is a Go return probe (a uprobe at
// the function's entry saves registers, matched by goroutine where the call ends) whose values are
// read at the end from registers saved at the entry:
//   server: net/http.serverHandler.ServeHTTP(sh, rw ResponseWriter, req *Request), entered for
//           every request HTTP/1 and HTTP/2 serve (h2 through initALPNRequest.ServeHTTP, on the
//           stream's own goroutine), ending at the entry of the function net/http calls once
//           the handler returned: an entry site after Go's stack check is emulated (~1 us a hit
//           here) where a RET is single-stepped (~15 us).
//             HTTP/1: net/http.(*response).finishRequest(w), which (*conn).serve calls next from
//                     the same frame; status = w.status.
//             HTTP/2: net/http.(*http2responseWriter).handlerDone(w), which runHandler's deferred
//                     func calls on the same goroutine, two frames deeper; status =
//                     w.rws.status (an http2responseWriterState).
//           Ending in another frame, the call is keyed by its goroutine alone (one request runs
//           on a goroutine at a time: a connection's for HTTP/1, a stream's for HTTP/2).
//           method = req.Method, path = req.URL.Path as it was at the entry (a router may rewrite
//           it), protocol = req.ProtoMajor and ProtoMinor. A status of 0 (nothing written) is
//           the 200 net/http answers. Which writer ended the call is checked, not assumed: its
//           `req` is this request.
//           A request no end sees never ended: the handler hijacked the connection (a WebSocket
//           upgrade), or panicked (net/http recovers and drops the connection or the stream).
//           The request is dropped from the entry map, counted (TC_ABANDONED), at the entry of
//           (*conn).hijackLocked (a hijack: at once), of (*conn).serve.func1 (the deferred end
//           of an HTTP/1 connection's goroutine, which runs when a handler panicked), and of
//           (*conn).serve and (*http2serverConn).runHandler (a connection or a stream starts on
//           a goroutine: what that goroutine descriptor still had recorded is from a goroutine
//           that ended: a panicked HTTP/2 handler is counted when the runtime reuses its
//           descriptor, before a new request's entry could take it for a rerun after morestack,
//           TC_ENTRY_REPEATED). Not at runtime.goexit1,
//           which net/http's background read reaches once per HTTP/1 request: a trap a request.
//           `uscope http`'s summary and the agent's uscope_events_lost count these and, at the
//           stop, every request still recorded as `unfinished`, never as served.
//           A binary without an out-of-line finishRequest ends at ServeHTTP's RETs, the status
//           then read through rw.
//   client: net/http.(*Client).do(c, req *Request) (*Response, error), ending at its RETs: each
//           function do calls once per call runs in do's own frame (another goroutine key), or
//           only for a redirect (redirectBehavior) or an error (its uerr closure).
//           method, scheme, host, path of req.URL; status = the *Response's StatusCode; whether
//           the error is non-nil
// Field offsets come from the binary (GoTypes: DWARF, runtime type descriptors, uscope's table),
// each with the source it came from.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/go_types.h"
#include "plan/planner.h"
#include "util/result.h"

namespace uscope {

enum class HttpSide { Server, Client };

inline constexpr std::string_view kHttpServerFunction = "net/http.serverHandler.ServeHTTP";
inline constexpr std::string_view kHttpClientFunction = "net/http.(*Client).do";
// Where a server request ends (see above): HTTP/1, HTTP/2; where one that never ends is dropped.
inline constexpr std::string_view kHttpServerEnd = "net/http.(*response).finishRequest";
inline constexpr std::string_view kHttp2ServerEnd = "net/http.(*http2responseWriter).handlerDone";
inline constexpr std::string_view kHttpHijack = "net/http.(*conn).hijackLocked";
inline constexpr std::string_view kHttp1ConnStart = "net/http.(*conn).serve";
inline constexpr std::string_view kHttp1ConnEnd = "net/http.(*conn).serve.func1";
inline constexpr std::string_view kHttp2StreamStart = "net/http.(*http2serverConn).runHandler";

// One struct field offset the probes use, and where it came from (`-v` prints these).
struct HttpFieldOffset {
  std::string type;   // "net/http.Request"
  std::string field;  // "Method"
  uint64_t offset = 0;
  GoTypeSource source = GoTypeSource::Dwarf;
};

// The offsets of the fields the probes read.
struct HttpLayout {
  uint64_t request_method = 0;       // net/http.Request.Method (string)
  uint64_t request_url = 0;          // net/http.Request.URL (*net/url.URL)
  uint64_t url_scheme = 0;           // net/url.URL.Scheme
  uint64_t url_host = 0;             // net/url.URL.Host
  uint64_t url_path = 0;             // net/url.URL.Path
  uint64_t response_status = 0;      // net/http.response.status (int, the server's ResponseWriter)
  uint64_t response_req = 0;         // net/http.response.req (*Request)
  uint64_t client_status = 0;        // net/http.Response.StatusCode (int)
  uint64_t request_proto_major = 0;  // net/http.Request.ProtoMajor (int)
  uint64_t request_proto_minor = 0;  // net/http.Request.ProtoMinor (int)
  uint64_t h2_writer_state = 0;      // net/http.http2responseWriter.rws (pointer)
  uint64_t h2_state_req = 0;         // net/http.http2responseWriterState.req (*Request)
  uint64_t h2_state_status = 0;      // net/http.http2responseWriterState.status (int)
  std::vector<HttpFieldOffset> sources;
};

// The layout of the sides asked for (a server-only binary need not hold net/http.Response's
// layout); `http2`: also HTTP/2's response writer. Errors name the field no source could place.
Result<HttpLayout> http_layout(const GoFieldLookup& lookup, bool server, bool client,
                               bool http2 = false);

// Which of the sides a Go binary has, from its function names: whether it calls into net/http's
// server (serverHandler.ServeHTTP) and client ((*Client).do). Fails for a binary that is not Go,
// a Go older than the register ABI (1.17), and a Go binary with neither side ("does not use
// net/http's server or client").
struct HttpSides {
  bool server = false;
  bool client = false;
  bool server_end_entry = false;  // one out-of-line kHttpServerEnd to end server requests at
  bool http2_end_entry = false;   // one out-of-line kHttp2ServerEnd (HTTP/2's server is linked)
  // Of kHttpHijack, kHttp1ConnEnd, kHttp1ConnStart and kHttp2StreamStart, those out-of-line once
  // in the binary (hijackLocked only where a handler can hijack).
  std::vector<std::string> abandon_at;
};
Result<HttpSides> http_sides(ObjectCache& cache, const std::string& target);

// The probe of one side, as the binary's functions allow (HttpSides). Output fields, in order:
//   server: method (string), path (string), status (u64; -1 when the writer that ended the call
//           is not this request's HTTP/1 *response), HTTP/2 status (u64; -1 when it is not this
//           request's *http2responseWriter), protocol (u64; ProtoMajor * 10 + ProtoMinor: 11, 20)
//   client: method, scheme, host, path (strings), response (u64; 1: a non-nil *Response), status
//           (u64; read only through a non-nil response), error (u64; 1: a non-nil error)
ProbeSpec http_probe(HttpSide side, const HttpLayout& layout, const HttpSides& sides);

// An end of `probe` (recipe of an http_probe() of `side`) made to count into its `aggregates` row
// (HttpPlanOptions::aggregate_bounds_ns): method and scheme keep 16 and 8 bytes, the other
// strings share what is left of the key.
Result<void> aggregate_http_end(uscope_recipe& r, uint32_t probe, HttpSide side,
                                std::span<const int64_t> bounds);

// Field indices of the probes' events and aggregated keys (http_probe's order).
namespace http_field {
inline constexpr size_t kServerMethod = 0, kServerPath = 1, kServerStatus = 2, kServerH2Status = 3,
                        kServerProto = 4, kServerFields = 5;
inline constexpr size_t kClientMethod = 0, kClientScheme = 1, kClientHost = 2, kClientPath = 3,
                        kClientResponse = 4, kClientStatus = 5, kClientError = 6, kClientFields = 7;
}  // namespace http_field

struct HttpPlan {
  TracePlan trace;
  std::vector<HttpSide> side_of_probe;  // by TracePlan::probes index
  HttpLayout layout;
};

struct HttpPlanOptions {
  std::string target;  // "" = the main binary of -p/-c
  bool server = true;  // probe the server side when the binary has it
  bool client = true;  // probe the client side when the binary has it
  bool move_sites = true;
  // Non-empty: exchanges are counted in the kernel, not sent as events (the agent's RED). Each
  // end's fields (http_probe's, strings cut to fit: fit_key) are the key of an `aggregates` row
  // whose slot is the probe's index, the duration its value, bucketed over these bounds
  // (nanoseconds, ascending, at most TRACE_AGG_MAX_BOUNDS; TRACE_AGG_BOUNDS). Such a row stands
  // for its count of exchanges with equal fields (http_exchange() of its decoded key).
  std::vector<int64_t> aggregate_bounds_ns;
};

// The sides the binary has (and the options keep), their layout and their probes, planned.
Result<HttpPlan> plan_http(ObjectCache& cache, const GoFieldLookup& lookup,
                           const HttpPlanOptions& opts);

}  // namespace uscope
