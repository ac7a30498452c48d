#pragma once
// The probes of `uscope tls`: the plaintext OpenSSL 3 and Go's crypto/tls read and write, as trace
// probes built in code and planned by plan_trace() like any other (one planner). Each is a return
// probe whose buffer pointer is saved at the entry and read at the return, for as many bytes as
// the call moved (what `r:ssl:SSL_read ((int)retval > 0) "%s", str($entry(arg2), retval)` does by
// hand):
//   OpenSSL: SSL_read, SSL_peek, SSL_write (int return = bytes), SSL_read_ex, SSL_peek_ex,
//            SSL_write_ex (return 1 = success, bytes through the size_t * 4th parameter), in
//            libssl or linked statically into a program (found by symbol)
//   Go:      crypto/tls.(*Conn).Read and Write(b []byte) (n int, err error): RET probes keyed by
//            goroutine, never a uretprobe
// A failed call (OpenSSL: <= 0, or _ex != 1; Go: n <= 0) is dropped in the kernel by the probe's
// predicate: its buffer is never read.
#include <cstddef>
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

enum class TlsLibrary { OpenSsl, Go };
enum class TlsDirection { Read, Write };

struct TlsFunction {
  std::string_view name;  // "SSL_read", "crypto/tls.(*Conn).Read"
  TlsLibrary library;
  TlsDirection direction;
  bool ex = false;    // OpenSSL _ex: returns 1 on success, the byte count through its 4th parameter
  bool peek = false;  // SSL_peek*: the bytes stay in OpenSSL's buffer for the next read
};

// Every function `uscope tls` probes, OpenSSL's first.
std::span<const TlsFunction> tls_functions();
const char* tls_library_name(TlsLibrary l);  // "openssl", "go"

// The most payload bytes one call's event carries (one string read of the trace program), and
// --max-bytes' default.
inline constexpr size_t kTlsMaxBytesLimit = kMaxStringBytes;
inline constexpr size_t kTlsDefaultMaxBytes = 4096;

// Where a connection's socket fd is read, when uscope knows the layout for certain; else why not.
//   OpenSSL 3.0/3.1 (has SSL_CTX_new_ex, no SSL_handle_events of 3.2's new SSL objects):
//     ssl->rbio (reads) or ssl->wbio (writes), taken as a socket or fd BIO only when its
//     method's type says so (BIO_TYPE_SOCKET, BIO_TYPE_FD), then bio->num
//   Go: c.conn (net.Conn), taken as a *net.TCPConn only when its itab is that type's (the itab's
//     address from .symtab, or in a stripped binary the .itablink entry whose descriptors are
//     named *net.TCPConn and net.Conn; not in PIE binaries), then .fd.pfd.Sysfd
// The fd is -1 otherwise, and the output says "fd unknown".
struct TlsFdLayout {
  bool known = false;
  std::string why_unknown;  // when !known
  // OpenSSL
  uint64_t ssl_rbio = 0, ssl_wbio = 0, bio_method = 0, bio_num = 0;
  // Go
  uint64_t conn_iface = 0;   // crypto/tls.Conn.conn
  uint64_t tcpconn_fd = 0;   // net.conn.fd (net.TCPConn embeds net.conn at offset 0)
  uint64_t netfd_sysfd = 0;  // net.netFD.pfd + internal/poll.FD.Sysfd
  uint64_t tcpconn_itab = 0;
};

// BIO_METHOD types (openssl/bio.h) whose `num` is a file descriptor.
inline constexpr uint32_t kBioTypeSocket = 5 | 0x0400 | 0x0100;
inline constexpr uint32_t kBioTypeFd = 4 | 0x0400 | 0x0100;

// The OpenSSL 3.0/3.1 layout, or why not (from the functions the object defines).
TlsFdLayout openssl_fd_layout(bool has_ctx_new_ex, bool has_handle_events);

// The Go layout from the binary's types and its *net.TCPConn itab (nullopt: none found).
TlsFdLayout go_fd_layout(const GoFieldLookup& lookup, std::optional<uint64_t> tcpconn_itab);

// Output fields of every TLS probe, in order.
namespace tls_field {
inline constexpr size_t kConn = 0;   // u64: the SSL * or the *tls.Conn
inline constexpr size_t kFd = 1;     // s64: the socket fd, -1 when not known
inline constexpr size_t kBytes = 2;  // u64: bytes the call read or wrote
inline constexpr size_t kData = 3;   // string: the first min(bytes, max_bytes) of them
inline constexpr size_t kFields = 4;
}  // namespace tls_field

// The probe of `f` in `target` (a path, "" for the main binary).
ProbeSpec tls_probe(const TlsFunction& f, const std::string& target, const TlsFdLayout& fd,
                    size_t max_bytes);

// One object whose TLS functions are probed.
struct TlsObject {
  std::string target;  // as the specs name it
  std::string path;    // display path
  TlsLibrary library = TlsLibrary::OpenSsl;
  std::string how;  // "mapped", "linked statically", "from ld.so.cache (loaded later)"
  std::vector<const TlsFunction*> found;
  std::vector<std::string> missing;
  TlsFdLayout fd;
};

struct TlsPlanOptions {
  size_t max_bytes = kTlsDefaultMaxBytes;
  // Libraries to probe for OpenSSL also when the process does not map them (yet): a path or a
  // short name ("ssl"). Without -p, the system's libssl is probed when the program is dynamic.
  std::vector<std::string> libraries;
  bool move_sites = true;
};

struct TlsProbeInfo {
  const TlsFunction* function = nullptr;
  size_t object = 0;  // into TlsPlan::objects
};

struct TlsPlan {
  TracePlan trace;
  std::vector<TlsObject> objects;
  std::vector<TlsProbeInfo> of_probe;  // by TracePlan::probes index
  size_t max_bytes = kTlsDefaultMaxBytes;
};

// The objects of the target with TLS functions: the program (OpenSSL linked statically, Go's
// crypto/tls), the libssl the process maps, and the libraries asked for (or, for a command about
// to start, the system's libssl.so.3, which it may link or dlopen()). Fails naming what was
// looked at when none has any of the functions, or when a library asked for has none.
Result<TlsPlan> plan_tls(ObjectCache& cache, const TargetContext& ctx,
                         const GoFieldLookup& go_field, const TlsPlanOptions& opts);

}  // namespace uscope
