#include "model/tls_records.h"

#include <cstring>

namespace uscope {

bool tls_record(const TlsProbeInfo& probe, const DecodedEvent& ev, TlsRecord& out) {
  namespace f = tls_field;
  if (ev.n_values < f::kFields || !probe.function) return false;
  out.ts_ns = ev.header.ts;
  out.duration_ns = ev.header.duration_ns;
  out.pid = ev.header.tgid;
  out.tid = ev.header.tid;
  out.comm.assign(ev.header.comm, strnlen(ev.header.comm, sizeof(ev.header.comm)));
  out.function = probe.function;
  out.conn = ev.values[f::kConn].number;
  out.fd = static_cast<int64_t>(ev.values[f::kFd].number);
  if (out.fd < 0) out.fd = -1;
  out.peer.clear();
  out.bytes = ev.values[f::kBytes].number;
  const DecodedValue& data = ev.values[f::kData];
  out.data = data.text;
  out.late = data.late;
  out.unreadable = data.unreadable;
  return true;
}

void TlsTotals::add(const TlsRecord& r) {
  if (r.function->direction == TlsDirection::Read) {
    ++reads;
    read_bytes += r.bytes;
  } else {
    ++writes;
    write_bytes += r.bytes;
  }
  if (r.fd < 0)
    ++fd_unknown;
  else if (r.peer.empty())
    ++peer_unknown;
  if (r.late) ++late_payloads;
}

}  // namespace uscope
