#include "plan/tls_plan.h"

#include <elf.h>
#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
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

constexpr TlsFunction kFunctions[] = {
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

bool defines(const SymbolTable& syms, std::string_view name) {
  return !functions_named(syms, name).empty();
}

// What `o` holds of `library`'s functions; `o.found` empty when none.
Result<void> find_functions(ObjectCache& cache, PlannedObject& obj, TlsObject& o) {
  auto syms = cache.symbols(obj);
  if (!syms) return tl::unexpected(syms.error());
  for (const auto& f : kFunctions) {
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
  return kFunctions;
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
        "no {} symbol (a stripped binary): a connection's type cannot be checked", kTcpConnItab);
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
      // *readbytes is read only after a successful call: the && keeps a failed one unread.
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

Result<TlsPlan> plan_tls(ObjectCache& cache, const TargetContext& ctx,
                         const GoFieldLookup& go_field, const TlsPlanOptions& opts) {
  if (opts.max_bytes < 1 || opts.max_bytes > kTlsMaxBytesLimit)
    return fail("--max-bytes {}: from 1 to {} bytes per call", opts.max_bytes, kTlsMaxBytesLimit);
  TlsPlan plan;
  plan.max_bytes = opts.max_bytes;
  std::vector<std::string> looked_at;

  // The program: Go's crypto/tls, or OpenSSL linked into it.
  auto main = cache.get("");
  if (!main) return tl::unexpected(main.error());
  const std::string main_path = (*main)->ref.display_path;
  {
    TlsObject o;
    o.path = main_path;
    o.library = (*main)->is_go ? TlsLibrary::Go : TlsLibrary::OpenSsl;
    o.how = (*main)->is_go ? "Go crypto/tls" : "OpenSSL linked statically";
    if (auto r = find_functions(cache, **main, o); !r) return tl::unexpected(r.error());
    if (o.library == TlsLibrary::Go && !o.found.empty()) {
      if ((*main)->go && !(*main)->go->register_abi())
        return fail(
            "{} was built by {}, which passes arguments on the stack: uscope tls reads Go's "
            "register ABI (Go 1.17 or later)",
            main_path, (*main)->go->version);
      std::optional<uint64_t> itab;
      if ((*main)->elf.type() == ET_EXEC) itab = symbol_address(**main, std::string(kTcpConnItab));
      o.fd = go_fd_layout(go_field, itab);
      if (itab && (*main)->elf.type() != ET_EXEC) o.fd.why_unknown = "a PIE Go binary";
    }
    looked_at.push_back(fmt::format("{} ({})", main_path,
                                    (*main)->is_go ? "Go, no crypto/tls" : "no SSL_* functions"));
    if (!o.found.empty()) plan.objects.push_back(std::move(o));
  }

  // Libraries: mapped libssl, the ones asked for, the system's for a command about to start.
  std::vector<std::pair<std::string, ObjectRef>> libs;  // (how, ref)
  // One file named twice (mapped, and asked for by name) is probed once: by its inode.
  auto same_file = [](const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return a == b;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  };
  auto add_lib = [&](std::string how, ObjectRef ref) {
    for (const auto& [h, r] : libs)
      if (same_file(r.open_path, ref.open_path)) return;
    libs.emplace_back(std::move(how), std::move(ref));
  };
  if (ctx.process)
    for (const auto& m : ctx.process->objects())
      if (is_libssl(m.path)) add_lib("mapped", ObjectRef{m.path, m.open_path, m.deleted});
  std::vector<std::string> asked = opts.libraries;
  const bool dynamic_program =
      !(*main)->is_go && !(*main)->elf.segments().empty() &&
      std::any_of((*main)->elf.segments().begin(), (*main)->elf.segments().end(),
                  [](const ElfSegment& s) { return s.type == PT_INTERP; });
  // A program with OpenSSL linked in does not load libssl besides.
  const bool static_openssl = !plan.objects.empty() && !(*main)->is_go;
  if (!ctx.process && dynamic_program && !static_openssl && asked.empty())
    asked.push_back("libssl.so.3");
  for (const auto& name : asked) {
    std::string path = name;
    if (name.find('/') == std::string::npos) {
      auto cache_entries = read_ld_so_cache();
      if (!cache_entries) return tl::unexpected(cache_entries.error());
      auto found = resolve_library(name, *cache_entries);
      if (!found) {
        if (opts.libraries.empty()) continue;  // the default: no system libssl, nothing to add
        return fail("--lib {}: {}", name, found.error().message);
      }
      path = *found;
    }
    add_lib("loaded later (dlopen) or at start", ObjectRef{path, path, false});
  }
  for (auto& [how, ref] : libs) {
    auto obj = cache.open_as(ref.open_path, ref);
    if (!obj) return tl::unexpected(obj.error());
    TlsObject o;
    o.target = ref.open_path;
    o.path = ref.display_path;
    o.how = how;
    if (auto r = find_functions(cache, **obj, o); !r) return tl::unexpected(r.error());
    if (o.found.empty()) {
      auto syms = cache.symbols(**obj);
      std::vector<std::string> ssl;
      if (syms)
        for (const auto& f : (*syms)->functions())
          if (f.name.starts_with("SSL_") && ssl.size() < 8) ssl.push_back(f.name);
      return fail("{} has none of the functions uscope tls probes ({}); its SSL_ functions: {}",
                  ref.display_path, join(o.missing), ssl.empty() ? "none" : join(ssl));
    }
    plan.objects.push_back(std::move(o));
  }
  if (plan.objects.empty())
    return fail(
        "no TLS library to probe: {}; TLS-like libraries mapped: {}. uscope tls reads OpenSSL 3 "
        "(libssl, or linked into the program) and Go's crypto/tls; a library the process loads "
        "later: --lib ssl (or its path)",
        join(looked_at), ctx.process ? tls_like_mappings(*ctx.process) : "none (not started)");

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
  // plan_trace() makes one probe per spec here (no globs), in spec order.
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
