#pragma once
// `uscope tls`'s model: one TLS read or write per event of a tls probe (plan/tls_plan.h), with the
// connection it went over, and the session's totals and losses. The peer address is looked up by
// the collecting side (tls_peers.h); the sink formats what this holds.
#include <cstdint>
#include <string>

#include "model/decoded_event.h"
#include "model/event_losses.h"
#include "plan/tls_plan.h"

namespace uscope {

struct TlsRecord {
  uint64_t ts_ns = 0;        // bpf_ktime_get_ns() at the return
  uint64_t duration_ns = 0;  // since the call's entry
  uint32_t pid = 0, tid = 0;
  std::string comm;
  const TlsFunction* function = nullptr;
  uint64_t conn = 0;        // the SSL * or the *tls.Conn
  int64_t fd = -1;          // -1: not known (see TlsFdLayout)
  std::string peer;         // "127.0.0.1:4433"; "" when not known
  uint64_t bytes = 0;       // what the call read or wrote
  std::string data;         // the first of them, as many as --max-bytes lets through
  bool late = false;        // read from the live process after the event
  bool unreadable = false;  // could not be read at all (data empty)
  uint64_t not_captured() const { return bytes > data.size() ? bytes - data.size() : 0; }
};

// Fills `out` from an event of `probe`; false for an event without the probe's fields (malformed:
// counted by the decoder). Reuses `out`'s strings.
bool tls_record(const TlsProbeInfo& probe, const DecodedEvent& ev, TlsRecord& out);

// What the session saw, and every way a call went missing or incomplete.
struct TlsTotals {
  uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;
  uint64_t fd_unknown = 0;     // calls whose fd was not known
  uint64_t peer_unknown = 0;   // calls with an fd whose peer was not found (not TCP, or gone)
  uint64_t no_data_calls = 0;  // calls that failed or moved nothing: not shown (filtered)
  uint64_t late_payloads = 0;  // payloads read from the live process after the event
  void add(const TlsRecord& r);
};

struct TlsLosses : EventLosses {
  uint64_t unreadable_payloads = 0;  // payloads not readable even from the live process
  uint64_t cut_calls = 0;            // calls longer than --max-bytes
  uint64_t cut_bytes = 0;            // the bytes of those calls not captured
};

}  // namespace uscope
