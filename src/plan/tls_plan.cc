#include "plan/tls_plan.h"

#include <elf.h>
#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "discover/library_names.h"
#include "plan/expr_build.h"
#include "plan/site_match.h"
#include "util/names.h"

namespace uscope {

using expr::at_entry;
using expr::binary;
using expr::integer;
using expr::load;
using expr::reg;

namespace {

constexpr TlsFunction kTlsFunctions[] = {
    {"SSL_read", TlsLibrary::OpenSsl, TlsDirection::Read},
    {"SSL_write", TlsLibrary::OpenSsl, TlsDirection::Write},
    {"SSL_read_ex", TlsLibrary::OpenSsl, TlsDirection::Read, true},
    {"SSL_write_ex", TlsLibrary::OpenSsl, TlsDirection::Write, true},
    {"SSL_peek", TlsLibrary::OpenSsl, TlsDirection::Read, false, true},
    {"SSL_peek_ex", TlsLibrary::OpenSsl, TlsDirection::Read, true, true},
    {"crypto/tls.(*Conn).Read", TlsLibrary::Go, TlsDirection::Read},
    {"crypto/tls.(*Conn).Write", TlsLibrary::Go, TlsDirection::Write},
};

// The Go symbol of the itab that makes a *net.TCPConn a net.Conn (Go 1.17 to 1.20 name it so).
constexpr std::string_view kTcpConnItab = "go.itab.*net.TCPConn,net.Conn";

// `ptr` when `ok` (0 or 1), else the stack pointer: a value read through a pointer that may not
// be one is read from the stack instead, which is always readable (no read error counted for a
// value the probe then ignores). rsp + ok * (ptr - rsp): the fewest ops of a recipe's 64.
Expr checked_pointer(const Expr& ok, Expr ptr) {
  return binary("+", reg("rsp"), binary("*", ok, binary("-", std::move(ptr), reg("rsp"))));
}

// The socket fd, evaluated at the entry: `conn` is the SSL * (rdi) or the *tls.Conn (rax).
Expr fd_at_entry(const TlsFunction& f, const TlsFdLayout& l) {
  if (!l.known) return integer(-1);
  if (f.library == TlsLibrary::OpenSsl) {
    // The BIO is OpenSSL's own object whatever its type: its `num` is readable, and kept only
    // for a socket or fd BIO (their types differ in the lowest bit).
    static_assert((kBioTypeFd | 1) == kBioTypeSocket);
    Expr bio = load(reg("rdi"), f.direction == TlsDirection::Read ? l.ssl_rbio : l.ssl_wbio);
    Expr type = load(load(bio, l.bio_method), 0, 4);
    Expr is_fd = binary("==", binary("|", type, integer(1)), integer(kBioTypeSocket));
    return expr::or_minus_one(is_fd, load(bio, l.bio_num, 4, true));
  }
  Expr is_tcp =
      binary("==", load(reg("rax"), l.conn_iface), integer(static_cast<int64_t>(l.tcpconn_itab)));
  Expr tcp = checked_pointer(is_tcp, load(reg("rax"), l.conn_iface + 8));
  Expr netfd = checked_pointer(is_tcp, load(tcp, l.tcpconn_fd));
  return expr::or_minus_one(is_tcp, load(netfd, l.netfd_sysfd));
}

// The word at link-time address `addr` of `elf` (x86-64: little-endian, as the host).
std::optional<uint64_t> word_at(const ElfFile& elf, uint64_t addr) {
  auto b = elf.allocated_bytes(addr, 8);
  if (!b) return std::nullopt;
  uint64_t v = 0;
  std::memcpy(&v, b->data(), 8);
  return v;
}

// The link-time address of the itab that makes a *net.TCPConn a net.Conn: its symbol, else, in a
// stripped binary, the one among the binary's itabs (.itablink, which the runtime needs and
// -ldflags=-s keeps) whose interface and type descriptors are named so (runtime.itab: inter,
// _type, ...).
std::optional<uint64_t> find_tcpconn_itab(PlannedObject& m) {
  if (auto a = symbol_address(m, std::string(kTcpConnItab))) return a;
  auto section = m.elf.section(".itablink");
  if (!section) return std::nullopt;
  auto links = m.elf.section_data(*section);
  auto types = go_types_of(m);
  if (!links || !types) return std::nullopt;
  for (size_t off = 0; off + 8 <= links->size(); off += 8) {
    uint64_t itab = 0;
    std::memcpy(&itab, links->data() + off, 8);
    auto inter = word_at(m.elf, itab), type = word_at(m.elf, itab + 8);
    if (!inter || !type) continue;
    if ((*types)->type_name_at(*type) == "*net.TCPConn" &&
        (*types)->type_name_at(*inter) == "net.Conn")
      return itab;
  }
  return std::nullopt;
}

bool defines(const SymbolTable& syms, std::string_view name) {
  return !functions_named(syms, name).empty();
}

// What `o` holds of `library`'s functions; `o.found` empty when none.
Result<void> find_functions(ObjectCache& cache, PlannedObject& obj, TlsObject& o) {
  auto syms = cache.symbols(obj);
  if (!syms) return tl::unexpected(syms.error());
  for (const auto& f : kTlsFunctions) {
    if (f.library != o.library) continue;
    if (defines(**syms, f.name))
      o.found.push_back(&f);
    else
      o.missing.emplace_back(f.name);
  }
  if (o.library == TlsLibrary::OpenSsl)
    o.fd =
        openssl_fd_layout(defines(**syms, "SSL_CTX_new_ex"), defines(**syms, "SSL_handle_events"));
  return {};
}

bool is_libssl(std::string_view path) {
  return library_name_matches("ssl", path);
}

// The names a failure lists: what the process maps that looks like a TLS library.
std::string tls_like_mappings(const Process& p) {
  std::vector<std::string> names;
  for (const auto& o : p.objects()) {
    std::string_view base = std::string_view(o.path).substr(o.path.rfind('/') + 1);
    for (std::string_view lib : {"libssl", "libgnutls", "libnss3", "libwolfssl", "libmbedtls",
                                 "libcrypto", "libboringssl"})
      if (base.starts_with(lib)) names.push_back(o.path);
  }
  return names.empty() ? "none" : join(names);
}

}  // namespace

std::span<const TlsFunction> tls_functions() {
  return kTlsFunctions;
}

const char* tls_library_name(TlsLibrary l) {
  return l == TlsLibrary::OpenSsl ? "openssl" : "go";
}

TlsFdLayout openssl_fd_layout(bool has_ctx_new_ex, bool has_handle_events) {
  TlsFdLayout l;
  if (!has_ctx_new_ex) {
    l.why_unknown =
        "no SSL_CTX_new_ex (OpenSSL before 3, or linked in without it): uscope knows the SSL "
        "layout of 3.0 and 3.1";
    return l;
  }
  if (has_handle_events) {
    l.why_unknown =
        "OpenSSL 3.2 or later (SSL_handle_events): uscope knows the SSL layout of 3.0 "
        "and 3.1";
    return l;
  }
  // ssl/ssl_local.h: struct ssl_st { int version; const SSL_METHOD *method; BIO *rbio, *wbio; }
  // crypto/bio/bio_local.h: struct bio_st { OSSL_LIB_CTX *libctx; const BIO_METHOD *method;
  //   callback, callback_ex, cb_arg; int init, shutdown, flags, retry_reason, num; ... }
  // (Debian builds with the deprecated callback); struct bio_method_st starts with int type.
  l.known = true;
  l.ssl_rbio = 16;
  l.ssl_wbio = 24;
  l.bio_method = 8;
  l.bio_num = 56;
  return l;
}

TlsFdLayout go_fd_layout(const GoFieldLookup& lookup, std::optional<uint64_t> tcpconn_itab) {
  TlsFdLayout l;
  if (!tcpconn_itab) {
    l.why_unknown = fmt::format(
        "no {} (no such symbol, nor an itab of that name in .itablink): a connection's type "
        "cannot be checked",
        kTcpConnItab);
    return l;
  }
  struct Need {
    const char* type;
    const char* field;
    uint64_t* out;
  };
  uint64_t pfd = 0, sysfd = 0;
  const Need needs[] = {{"crypto/tls.Conn", "conn", &l.conn_iface},
                        {"net.conn", "fd", &l.tcpconn_fd},
                        {"net.netFD", "pfd", &pfd},
                        {"internal/poll.FD", "Sysfd", &sysfd}};
  for (const auto& n : needs) {
    auto f = lookup(n.type, n.field);
    if (!f) {
      l.why_unknown = fmt::format("cannot place {}.{}: {}", n.type, n.field, f.error().message);
      return l;
    }
    *n.out = f->offset;
  }
  l.netfd_sysfd = pfd + sysfd;
  l.tcpconn_itab = *tcpconn_itab;
  l.known = true;
  return l;
}

ProbeSpec tls_probe(const TlsFunction& f, const std::string& target, const TlsFdLayout& fd,
                    size_t max_bytes) {
  ProbeSpec spec;
  spec.kind = ProbeKind::Return;
  spec.target = target;
  spec.function = f.name;
  spec.text = fmt::format("tls {} probe on {}",
                          f.direction == TlsDirection::Read ? "read" : "write", f.name);
  Expr conn, buf, bytes;
  if (f.library == TlsLibrary::Go) {
    // Go register ABI: (c *Conn RAX).Read(b []byte RBX, RCX, RDI) (n int RAX, err error RBX, RCX)
    conn = at_entry(reg("rax"));
    buf = at_entry(reg("rbx"));
    bytes = reg("rax");
    spec.predicate = binary(">", bytes, integer(0));
  } else {
    // SysV: SSL_read(SSL *ssl RDI, void *buf RSI, int num RDX) -> int;
    // SSL_read_ex(ssl, buf, size_t num RDX, size_t *readbytes RCX) -> int (1 = success)
    conn = at_entry(reg("rdi"));
    buf = at_entry(reg("rsi"));
    Expr ret = expr::signed_cast(expr::retval(), 4);
    if (f.ex) {
      // The predicate drops a failed call before *readbytes is read.
      spec.predicate = binary("==", ret, integer(1));
      bytes = load(at_entry(reg("rcx")), 0);
    } else {
      spec.predicate = binary(">", ret, integer(0));
      bytes = ret;
    }
  }
  expr::add_arg(spec, conn, 'x');
  expr::add_arg(spec, at_entry(fd_at_entry(f, fd)), 'd');
  expr::add_arg(spec, bytes, 'u');
  expr::add_arg(spec, expr::bytes_at(buf, expr::at_most(bytes, static_cast<int64_t>(max_bytes))),
                's');
  return spec;
}

namespace {

// The program itself when it holds TLS functions (Go's crypto/tls, or OpenSSL linked in); else
// nullopt and `looked_at` says what it is.
Result<std::optional<TlsObject>> program_object(ObjectCache& cache, const GoFieldLookup& go_field,
                                                std::string& looked_at) {
  auto main = cache.get("");
  if (!main) return tl::unexpected(main.error());
  PlannedObject& m = **main;
  TlsObject o;
  o.path = m.ref.display_path;
  o.library = m.is_go ? TlsLibrary::Go : TlsLibrary::OpenSsl;
  o.how = m.is_go ? "Go crypto/tls" : "OpenSSL linked statically";
  looked_at = fmt::format("{} ({})", o.path, m.is_go ? "Go, no crypto/tls" : "no SSL_* functions");
  if (auto r = find_functions(cache, m, o); !r) return tl::unexpected(r.error());
  if (o.found.empty()) return std::nullopt;
  if (o.library == TlsLibrary::Go) {
    if (m.go && !m.go->register_abi())
      return fail(
          "{} was built by {}, which passes arguments on the stack: uscope tls reads Go's "
          "register ABI (Go 1.17 or later)",
          o.path, m.go->version);
    o.fd = go_fd_layout(go_field, find_tcpconn_itab(m));
    if (o.fd.known && m.elf.type() != ET_EXEC) {
      // The itab's link-time address is not the one the probes would compare with.
      o.fd = TlsFdLayout{};
      o.fd.why_unknown = "a PIE Go binary: its itab's address is known only once it is loaded";
    }
  }
  return o;
}

bool has_interpreter(const ElfFile& elf) {
  return std::any_of(elf.segments().begin(), elf.segments().end(),
                     [](const ElfSegment& s) { return s.type == PT_INTERP; });
}

// One file named twice (mapped, and asked for by name) is probed once: by its inode.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa = {};
  struct stat sb = {};
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return a == b;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct LibraryRef {
  std::string how;
  ObjectRef ref;
};

// The libssl files to probe: the ones the process maps, the ones asked for (`asked`: paths or
// short names), and with neither, for a dynamic command about to start without OpenSSL of its
// own, the system's libssl.so.3 (if there is one).
Result<std::vector<LibraryRef>> library_refs(const TargetContext& ctx,
                                             const std::vector<std::string>& asked,
                                             bool default_libssl) {
  std::vector<LibraryRef> libs;
  auto add = [&](std::string how, ObjectRef ref) {
    for (const auto& l : libs)
      if (same_file(l.ref.open_path, ref.open_path)) return;
    libs.push_back({std::move(how), std::move(ref)});
  };
  if (ctx.process)
    for (const auto& m : ctx.process->objects())
      if (is_libssl(m.path)) add("mapped", ObjectRef{m.path, m.open_path, m.deleted});
  std::vector<std::string> names = asked;
  if (names.empty() && default_libssl) names.push_back("libssl.so.3");
  for (const auto& name : names) {
    std::string path = name;
    if (name.find('/') == std::string::npos) {
      auto entries = read_ld_so_cache();
      if (!entries) return tl::unexpected(entries.error());
      auto found = resolve_library(name, *entries);
      if (!found) {
        if (asked.empty()) continue;  // the default: no system libssl, nothing to add
        return fail("--lib {}: {}", name, found.error().message);
      }
      path = *found;
    }
    add("loaded later (dlopen) or at start", ObjectRef{path, path, false});
  }
  return libs;
}

// A library's functions; an error listing what it has when it has none of them.
Result<TlsObject> library_object(ObjectCache& cache, const LibraryRef& lib) {
  auto obj = cache.open_as(lib.ref.open_path, lib.ref);
  if (!obj) return tl::unexpected(obj.error());
  TlsObject o;
  o.target = lib.ref.open_path;
  o.path = lib.ref.display_path;
  o.how = lib.how;
  if (auto r = find_functions(cache, **obj, o); !r) return tl::unexpected(r.error());
  if (!o.found.empty()) return o;
  auto syms = cache.symbols(**obj);
  std::vector<std::string> ssl;
  if (syms)
    for (const auto& f : (*syms)->functions())
      if (f.name.starts_with("SSL_") && ssl.size() < 8) ssl.push_back(f.name);
  return fail("{} has none of the functions uscope tls probes ({}); its SSL_ functions: {}", o.path,
              join(o.missing), ssl.empty() ? "none" : join(ssl));
}

}  // namespace

Result<TlsPlan> plan_tls(ObjectCache& cache, const TargetContext& ctx,
                         const GoFieldLookup& go_field, const TlsPlanOptions& opts) {
  if (opts.max_bytes < 1 || opts.max_bytes > kTlsMaxBytesLimit)
    return fail("--max-bytes {}: from 1 to {} bytes per call", opts.max_bytes, kTlsMaxBytesLimit);
  TlsPlan plan;
  plan.max_bytes = opts.max_bytes;
  std::string looked_at;
  auto program = program_object(cache, go_field, looked_at);
  if (!program) return tl::unexpected(program.error());
  if (*program) plan.objects.push_back(std::move(**program));
  auto main = cache.get("");
  if (!main) return tl::unexpected(main.error());
  const bool default_libssl =
      !ctx.process && plan.objects.empty() && !(*main)->is_go && has_interpreter((*main)->elf);
  auto libs = library_refs(ctx, opts.libraries, default_libssl);
  if (!libs) return tl::unexpected(libs.error());
  for (const auto& lib : *libs) {
    auto o = library_object(cache, lib);
    if (!o) return tl::unexpected(o.error());
    plan.objects.push_back(std::move(*o));
  }
  if (plan.objects.empty())
    return fail(
        "no TLS library to probe: {}; TLS-like libraries mapped: {}. uscope tls reads OpenSSL 3 "
        "(libssl, or linked into the program) and Go's crypto/tls; a library the process loads "
        "later: --lib ssl (or its path)",
        looked_at, ctx.process ? tls_like_mappings(*ctx.process) : "none (not started)");

  std::vector<ProbeSpec> specs;
  std::vector<TlsProbeInfo> info_of_spec;
  for (size_t i = 0; i < plan.objects.size(); ++i)
    for (const TlsFunction* f : plan.objects[i].found) {
      specs.push_back(tls_probe(*f, plan.objects[i].target, plan.objects[i].fd, opts.max_bytes));
      info_of_spec.push_back({f, i});
    }
  TraceOptions topts;
  topts.move_sites = opts.move_sites;
  auto trace = plan_trace(cache, specs, topts);
  if (!trace) return tl::unexpected(trace.error());
  plan.trace = std::move(*trace);
  // A probe per function matched: by its spec's function and object.
  for (const auto& p : plan.trace.probes) {
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].function == p.spec.function && specs[i].target == p.spec.target) {
        plan.of_probe.push_back(info_of_spec[i]);
        break;
      }
  }
  if (plan.of_probe.size() != plan.trace.probes.size())
    return fail("uscope tls: planned probes do not match the functions found");
  return plan;
}

}  // namespace uscope
