// Ring-buffer records are written by BPF code whose payload layout the decoder must trust no
// further than its bounds checks: a record of any bytes, for a probe of any field kinds, must be
// refused or decoded within the record. Deferred strings are read late from this process (the
// fuzzer's own memory: an address it guesses is read or refused, never dereferenced here). The
// same bytes as an aggregated row's key (EventDecoder::decode_key) likewise.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "collect/event_decoder.h"

namespace {

// Every byte of the decoded text, so ASan sees a string built from outside the record.
size_t touch(const uscope::DecodedEvent& e) {
  size_t sum = 0;
  for (size_t i = 0; i < e.n_values; ++i) {
    for (char c : e.values[i].text) sum += static_cast<unsigned char>(c);
    sum += e.values[i].number;
  }
  for (uint64_t a : e.user_stack) sum += a;
  for (uint64_t a : e.kernel_stack) sum += a;
  return sum;
}

}  // namespace

// Input: one byte giving the probe's field count (low 3 bits), then one byte per field for its
// kind, then the record as the ring buffer hands it out (uscope_event header, then payload).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using Kind = uscope::OutputField::Kind;
  if (size < 1) return 0;
  const size_t n_fields = data[0] & 7;
  if (size < 1 + n_fields) return 0;
  uscope::TracePlan plan;
  uscope::ProbePlan probe;
  for (size_t i = 0; i < n_fields; ++i) {
    static constexpr Kind kKinds[] = {Kind::Value, Kind::String, Kind::GoValue, Kind::GoValues};
    probe.fields.push_back({kKinds[data[1 + i] & 3], {}});
  }
  plan.probes.push_back(probe);
  plan.probes.push_back(probe);  // probe_id 1 as well: an id past the last must be refused
  std::span<const uint8_t> record(data + 1 + n_fields, size - 1 - n_fields);
  if (record.size() < sizeof(uscope_event)) return 0;  // TraceProgram counts these itself
  uscope_event header;
  std::memcpy(&header, record.data(), sizeof header);
  header.tgid = static_cast<uint32_t>(getpid());
  uscope::EventDecoder decoder(plan);
  uscope::DecodedEvent out;
  const bool ok = decoder.decode(header, record.subspan(sizeof header), out);
  volatile size_t sink = touch(out);
  (void)sink;
  if (ok && out.n_values != n_fields) __builtin_trap();
  if (ok && header.probe_id >= plan.probes.size()) __builtin_trap();
  // Decoding again into the reused event gives the same (no state left from the last record).
  uscope::DecodedEvent again;
  if (decoder.decode(header, record.subspan(sizeof header), again) != ok) __builtin_trap();
  // The payload's first bytes as an aggregated row's key (zero-padded), for probe 0 and past the
  // last probe: decoded within the key or refused.
  uscope::AggregateRow row;
  const auto payload = record.subspan(sizeof header);
  std::memcpy(row.key.data(), payload.data(), std::min(payload.size(), row.key.size()));
  row.slot = header.probe_id & 3;
  const bool key_ok = decoder.decode_key(row, out);
  volatile size_t key_sink = touch(out);
  (void)key_sink;
  if (key_ok && (out.n_values != n_fields || row.slot >= plan.probes.size())) __builtin_trap();
  return 0;
}
