// dynstage_fuzz: the shrinker and the command-line driver.
//
//   dynstage_fuzz --seed S --count N [--max-nodes K] [--verbose] [--no-shrink] [--print] [--strict]
//                 [--transforms all|grad|vmap|none] [--float-inputs] [--transform-seeds N]
//                 [--known-bugs S1,S2,...] [--doctest] [--trace] [--no-threads] [--fault jit] [--golden FILE]
//
// Runs the programs of seeds S .. S+N-1 eagerly, through make_jaxpr +
// eval_jaxpr and through dyn::jit, prints `programs run, mismatches, errors
// (consistent), crashes`, and for each failure the seed and a shrunk C++
// reproduction; then (--transforms, default all) checks grad and vmap of
// each program that ran without error (fuzz_transform.cpp) and prints their
// tallies: checked, failed, skipped by reason. Exits 1 on any mismatch,
// crash or failed check. --float-inputs runs the programs the grad check
// uses (generate's float_inputs) as the seeds' programs. --transform-seeds N
// checks the transformations of the first N seeds only (CI's time bound);
// --known-bugs skips them for seeds that crash on a known, reported bug.
// Each jitted program also runs with 1 and with 2 threads, bitwise equal
// (--no-threads: not). --doctest prints a failure of the three ways as a
// ready-to-paste doctest TEST_CASE (to_doctest) instead of a main().
// --fault jit perturbs jit's first output (a failure in every program);
// --golden FILE then compares the first reproduction printed with FILE's
// text after its line "// ---- dynstage_fuzz output", and exits 0 only if
// they are identical (tests/fuzz/doctest_example.cpp: its test in meson).
#include "fuzz.hpp"

#include <dynstage/runtime/threads.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>

namespace fuzz {
namespace {

// ---- program surgery on the global slot numbering (fuzz.hpp)

// Applies f to every reference in nodes [from, end) of p, their bodies
// included (a body's own slots come after its node's base, which is past
// every slot these edits touch), and to p's outputs.
void remap(Program& p, std::size_t from, const std::function<int(int)>& f) {
  std::function<void(Program&)> all = [&](Program& q) {
    for (Node& n : q.nodes) {
      for (int& s : n.in) s = f(s);
      for (Program& b : n.body) all(b);
    }
    for (int& s : q.outs) s = f(s);
  };
  for (std::size_t k = from; k < p.nodes.size(); ++k) {
    for (int& s : p.nodes[k].in) s = f(s);
    for (Program& b : p.nodes[k].body) all(b);
  }
  for (int& s : p.outs) s = f(s);
}

// Base slot of node k of p (whose first own slot is `base`).
int node_base(const Program& p, int base, std::size_t k) {
  int s = base + static_cast<int>(p.params.size());
  for (std::size_t j = 0; j < k; ++j) s += static_cast<int>(p.nodes[j].out.size());
  return s;
}

// Whether slot s of p is used by nodes after `from` or by p's outputs.
bool used(const Program& p, int base, std::size_t from, int s) {
  std::function<bool(const Program&, int)> in_body = [&](const Program& q, int limit) {
    for (std::size_t k = 0; k < q.nodes.size(); ++k)
      for (int x : q.nodes[k].in)
        if (x == s && x < limit) return true;
    for (const Node& n : q.nodes)
      for (const Program& b : n.body)
        if (in_body(b, limit)) return true;
    for (int x : q.outs)
      if (x == s && x < limit) return true;
    return false;
  };
  for (int x : p.outs)
    if (x == s) return true;
  for (std::size_t k = from; k < p.nodes.size(); ++k) {
    for (int x : p.nodes[k].in)
      if (x == s) return true;
    const int b = node_base(p, base, k);
    for (const Program& q : p.nodes[k].body)
      if (in_body(q, b)) return true;
  }
  return false;
}

// Deletes the nodes of p (recursively in bodies) whose outputs are unused.
bool dce(Program& p, int base) {
  bool changed = false;
  for (std::size_t k = p.nodes.size(); k-- > 0;) {
    const int b = node_base(p, base, k);
    const int c = static_cast<int>(p.nodes[k].out.size());
    bool any = false;
    for (int s = b; s < b + c; ++s) any = any || used(p, base, k + 1, s);
    if (!any) {
      p.nodes.erase(p.nodes.begin() + static_cast<std::ptrdiff_t>(k));
      remap(p, k, [&](int s) { return s >= b + c ? s - c : s; });
      changed = true;
    } else {
      for (Program& q : p.nodes[k].body) changed = dce(q, b) || changed;
    }
  }
  return changed;
}

// Every (sub)program of c with its base slot.
void programs(Program& p, int base, std::vector<std::pair<Program*, int>>& out) {
  out.push_back({&p, base});
  for (std::size_t k = 0; k < p.nodes.size(); ++k)
    for (Program& b : p.nodes[k].body) programs(b, node_base(p, base, k), out);
}

std::string key(const Verdict& v) {
  return std::to_string(static_cast<int>(v.kind)) + ":" + v.what.substr(0, v.what.find(", output"));
}

// Greedy shrinking: every candidate edit that keeps the same kind of failure
// (the same key_of) is kept, until none applies.
Case shrink(Case c, const std::function<std::string(const Case&)>& key_of, bool verbose) {
  const std::string want = key_of(c);
  int accepted = 0;
  auto still = [&](Case& cand) {
    dce(cand.prog, 0);
    const bool ok = key_of(cand) == want;
    if (ok) ++accepted;
    return ok;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    // 1. One output.
    if (c.prog.outs.size() > 1)
      for (std::size_t k = 0; k < c.prog.outs.size(); ++k) {
        Case t = c;
        t.prog.outs = {c.prog.outs[k]};
        if (still(t)) { c = std::move(t); progress = true; break; }
      }
    // 2. A top-level node replaced by its eager value(s): constants.
    const std::vector<dyn::AnyArray> vals = eager_slots(c);
    for (std::size_t k = c.prog.nodes.size(); !vals.empty() && k-- > 0;) {
      if (c.prog.nodes[k].op == Op::constant) continue;
      Case t = c;
      const int b = node_base(c.prog, 0, k);
      std::vector<Node> repl;
      for (std::size_t j = 0; j < c.prog.nodes[k].out.size(); ++j) {
        Node n;
        n.op = Op::constant, n.data = vals.at(static_cast<std::size_t>(b) + j), n.out = {c.prog.nodes[k].out[j]};
        repl.push_back(std::move(n));
      }
      t.prog.nodes.erase(t.prog.nodes.begin() + static_cast<std::ptrdiff_t>(k));
      t.prog.nodes.insert(t.prog.nodes.begin() + static_cast<std::ptrdiff_t>(k), repl.begin(), repl.end());
      if (still(t)) { c = std::move(t); progress = true; }
    }
    // 3. A node replaced by one of its inputs of the same type; 4. fewer
    //    loop iterations; in every (sub)program.
    std::vector<std::pair<Program*, int>> ps;
    programs(c.prog, 0, ps);
    for (std::size_t pi = 0; pi < ps.size() && !progress; ++pi) {
      const Program& p = *ps[pi].first;
      for (std::size_t k = p.nodes.size(); k-- > 0 && !progress;) {
        const Node& n = p.nodes[k];
        auto type_of = [&](int s) -> const Ty* {
          // Slots of p itself (params and nodes); outer slots are not checked.
          int q = s - ps[pi].second;
          if (q < 0) return nullptr;
          if (q < static_cast<int>(p.params.size())) return &p.params[static_cast<std::size_t>(q)];
          q -= static_cast<int>(p.params.size());
          for (const Node& m : p.nodes) {
            if (q < static_cast<int>(m.out.size())) return &m.out[static_cast<std::size_t>(q)];
            q -= static_cast<int>(m.out.size());
          }
          return nullptr;
        };
        if (n.out.size() == 1)
          for (int s : n.in) {
            const Ty* t = type_of(s);
            if (!t || t->dt != n.out[0].dt || !(t->shape == n.out[0].shape)) continue;
            Case cand = c;
            std::vector<std::pair<Program*, int>> cps;
            programs(cand.prog, 0, cps);
            const int self = node_base(p, ps[pi].second, k);
            remap(*cps[pi].first, k + 1, [&](int x) { return x == self ? s : x; });
            if (still(cand)) { c = std::move(cand); progress = true; break; }
          }
        if (progress) break;
        if (n.op == Op::for_loop || n.op == Op::while_loop) {
          Case cand = c;
          std::vector<std::pair<Program*, int>> cps;
          programs(cand.prog, 0, cps);
          Node& m = cps[pi].first->nodes[k];
          bool can = false;
          if (n.op == Op::for_loop && m.p[1] != m.p[0]) m.p[1] -= m.p[2], can = true;
          if (n.op == Op::while_loop && m.p[0] > 0) --m.p[0], can = true;
          if (can && still(cand)) { c = std::move(cand); progress = true; }
        }
      }
    }
  }
  if (verbose) std::cerr << "shrinker: " << accepted << " edits kept\n";
  return c;
}

// The tally of one transformation check over a run.
struct Tally {
  long checked = 0, failed = 0;
  std::map<std::string, long> skipped, fd;  // by reason; grad: central differences by outcome
  void add(const Check& k) {
    if (k.kind == Check::checked) ++checked;
    if (k.kind == Check::failed) ++failed;
    if (k.kind == Check::skipped) ++skipped[k.what];
    if (k.kind == Check::checked && !k.fd.empty()) ++fd[k.fd];
  }
  static std::string list(const std::map<std::string, long>& m) {
    std::string r;
    for (const auto& [why, n] : m) r += std::string(r.empty() ? "" : "; ") + why + ": " + std::to_string(n);
    return r;
  }
  std::string str() const {
    long sk = 0;
    for (const auto& [why, n] : skipped) sk += n;
    std::string r = "checked " + std::to_string(checked) + ", failed " + std::to_string(failed) + ", skipped " +
                    std::to_string(sk);
    if (!fd.empty()) r += "\n  central differences: " + list(fd);
    if (!skipped.empty()) r += "\n  skipped: " + list(skipped);
    return r;
  }
};

// The key of a transformation check's failure, for the shrinker.
std::string check_key(const Check& k) { return k.kind == Check::failed ? k.what : "ok"; }

int count_nodes(const Program& p) {
  int n = 0;
  for (const Node& m : p.nodes) {
    ++n;
    for (const Program& b : m.body) n += count_nodes(b);
  }
  return n;
}

}  // namespace
}  // namespace fuzz

int main(int argc, char** argv) {
  using namespace fuzz;
  // Every traced program is verified (check.hpp); DYNSTAGE_CHECK_JAXPR=0 turns it off.
  setenv("DYNSTAGE_CHECK_JAXPR", "1", /*overwrite=*/0);
  std::uint64_t seed = 1;
  long count = 100;
  int max_nodes = 12;
  bool verbose = false, do_shrink = true, print = false, strict = false;
  bool do_grad = true, do_vmap = true, float_inputs = false;
  long transform_seeds = -1;        // the transformation checks: the first N seeds only (-1: all)
  std::set<std::uint64_t> known;    // seeds whose transformation checks hit a known bug (docs/reliability.md)
  bool doctest = false, trace = false;  // --trace: "seed S" on stderr before each program runs
  std::string golden;               // --golden FILE
  std::vector<std::string> repros;  // the reproductions printed for the three ways' failures
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) { std::cerr << a << " needs a value\n"; std::exit(2); }
      return argv[++i];
    };
    if (a == "--seed") seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--count") count = std::strtol(next(), nullptr, 10);
    else if (a == "--max-nodes") max_nodes = static_cast<int>(std::strtol(next(), nullptr, 10));
    else if (a == "--verbose") verbose = true;
    else if (a == "--no-shrink") do_shrink = false;
    else if (a == "--print") print = true;
    else if (a == "--strict") strict = true;
    else if (a == "--float-inputs") float_inputs = true;
    else if (a == "--doctest") doctest = true;
    else if (a == "--trace") trace = true;
    else if (a == "--no-threads") set_check_threads(false);
    else if (a == "--golden") golden = next();
    else if (a == "--fault") {
      const std::string f = next();
      if (f != "jit") { std::cerr << "--fault: jit only\n"; return 2; }
      set_jit_fault(true);
    }
    else if (a == "--transform-seeds") transform_seeds = std::strtol(next(), nullptr, 10);
    else if (a == "--known-bugs") {
      std::string list = next();
      for (std::size_t p = 0; p < list.size();) {
        const std::size_t q = std::min(list.find(',', p), list.size());
        known.insert(std::strtoull(list.substr(p, q - p).c_str(), nullptr, 10));
        p = q + 1;
      }
    }
    else if (a == "--transforms") {
      const std::string t = next();
      do_grad = t == "all" || t == "grad";
      do_vmap = t == "all" || t == "vmap";
    } else {
      std::cerr << "usage: dynstage_fuzz --seed S --count N [--max-nodes K] [--verbose] [--no-shrink] [--print] [--strict]"
                   " [--transforms all|grad|vmap|none] [--float-inputs]"
                   " [--transform-seeds N] [--known-bugs S1,S2,...] [--doctest] [--trace] [--no-threads] [--fault jit]"
                   " [--golden FILE]\n";
      return 2;
    }
  }
  long run = 0, mismatches = 0, errors = 0, crashes = 0, elided = 0, nodes = 0;
  long split = 0;  // programs whose kernels ran parallel tasks (the big ones: the threads check's subject)
  dyn::detail::count_tasks() = true;
  Tally grads, vmaps;
  long known_skipped = 0;
  double transform_secs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < count; ++k) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(k);
    if (trace) std::cerr << "seed " << s << std::endl;
    Case c = generate(s, max_nodes, float_inputs);
    // No dead code: tracing drops unused equations (as JAX does), so an
    // error in dead code (an integer 0 ** negative) is raised eagerly
    // only. That is by design, not a mismatch.
    dce(c.prog, 0);
    nodes += count_nodes(c.prog);
    if (print) std::cout << to_cpp(c, s);
    const std::int64_t tasks0 = dyn::detail::tasks_run().load();
    const Verdict v = run_case(c);
    ++run;
    const std::int64_t tasks = dyn::detail::tasks_run().load() - tasks0;
    if (tasks) ++split;
    if (verbose)
      std::cout << "seed " << s << ": " << count_nodes(c.prog) << " nodes, "
                << (tasks ? std::to_string(tasks) + " tasks (jit x3), " : "")
                << (v.kind == Verdict::pass               ? "pass"
                    : v.kind == Verdict::consistent_error ? "error " + v.what
                    : v.kind == Verdict::elided           ? "fault elided by jit"
                                                          : v.what)
                << (v.kind == Verdict::consistent_error ? v.detail : "") << "\n";
    if (v.kind == Verdict::consistent_error) ++errors;
    if (v.kind == Verdict::elided) ++elided;
    if (v.kind == Verdict::mismatch || v.kind == Verdict::crash || (strict && v.kind == Verdict::elided)) {
      (v.kind == Verdict::crash ? crashes : mismatches)++;
      std::cout << "FAIL seed " << s << ": " << v.what << ": " << v.detail << "\n";
      const Case m = do_shrink ? shrink(c, [](const Case& x) { return key(run_case(x)); }, verbose) : c;
      const Verdict vm = run_case(m);
      repros.push_back(doctest ? to_doctest(m, s, vm.what) : to_cpp(m, s));
      std::cout << "shrunk to " << count_nodes(m.prog) << " nodes (" << vm.what << ": " << vm.detail << ")\n"
                << repros.back() << std::endl;
    }
    if (v.kind != Verdict::pass) continue;
    if (transform_seeds >= 0 && k >= transform_seeds) continue;
    if (known.count(s)) {
      ++known_skipped;
      continue;
    }
    // grad and vmap of the program (with this seed's directions and lanes).
    const auto t1 = std::chrono::steady_clock::now();
    for (int which = 0; which < 2; ++which) {
      if (!(which == 0 ? do_grad : do_vmap)) continue;
      auto check = [&](const Case& x) { return which == 0 ? check_grad(x, s) : check_vmap(x, s); };
      // grad: this seed's program with float inputs more often (generate's
      // float_inputs), run the three ways first; vmap: the program above.
      Case cg;
      if (which == 0) {
        cg = generate(s, max_nodes, /*float_inputs=*/true);
        dce(cg.prog, 0);
        const Verdict vg = run_case(cg);
        if (vg.kind == Verdict::mismatch || vg.kind == Verdict::crash) {
          // A bug of the three ways: reported like the program's own.
          ++grads.failed;
          std::cout << "FAIL seed " << s << " (float inputs): " << vg.what << ": " << vg.detail << "\n"
                    << to_cpp(cg, s) << std::endl;
          continue;
        }
        if (vg.kind != Verdict::pass) {
          grads.add(Check{Check::skipped, "the program raises", "", ""});
          continue;
        }
      }
      const Case& cc = which == 0 ? cg : c;
      const Check k = check(cc);
      (which == 0 ? grads : vmaps).add(k);
      if (verbose)
        std::cout << "seed " << s << ": " << (which == 0 ? "grad " : "vmap ")
                  << (k.kind == Check::checked ? "checked" + (k.fd.empty() ? "" : " (central differences: " + k.fd + ")")
                      : k.kind == Check::skipped ? "skipped, " + k.what
                                                 : "FAILED")
                  << "\n";
      if (k.kind != Check::failed) continue;
      std::cout << "FAIL seed " << s << ": " << k.what << ": " << k.detail << "\n";
      const Case m = do_shrink ? shrink(cc, [&](const Case& x) { return check_key(check(x)); }, verbose) : cc;
      const Check km = check(m);
      std::cout << "shrunk to " << count_nodes(m.prog) << " nodes (" << km.what << ": " << km.detail << ")\n"
                << to_cpp(m, s) << std::endl;
    }
    transform_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "programs run " << run << ", mismatches " << mismatches << ", errors (consistent) " << errors
            << ", crashes " << crashes << ", faults elided by jit " << elided << " (seeds " << seed << ".." << seed + static_cast<std::uint64_t>(count) - 1
            << ", " << nodes << " nodes, " << secs << " s)\n"
            << "threads: 1 vs 2 bitwise " << (check_threads() ? "checked" : "off") << ", " << split
            << " programs called the thread pool\n";
  if (do_grad) std::cout << "grad: " << grads.str() << "\n";
  if (do_vmap) std::cout << "vmap: " << vmaps.str() << "\n";
  if (!golden.empty()) {
    // The reproduction printer's golden test: the first reproduction vs FILE.
    std::ifstream in(golden);
    std::string line, want;
    bool after = false;
    while (std::getline(in, line)) {
      if (after) want += line + "\n";
      else after = line.rfind("// ---- dynstage_fuzz output", 0) == 0;
    }
    if (!after) { std::cout << "golden: no line \"// ---- dynstage_fuzz output\" in " << golden << "\n"; return 1; }
    if (repros.empty()) { std::cout << "golden: no failure, so no reproduction to compare\n"; return 1; }
    if (repros[0] == want) { std::cout << "golden: the reproduction is " << golden << "'s text\n"; return 0; }
    std::size_t i = 0;
    while (i < want.size() && i < repros[0].size() && want[i] == repros[0][i]) ++i;
    const std::size_t nl = repros[0].rfind('\n', i == 0 ? 0 : i - 1);
    std::cout << "golden: the reproduction differs from " << golden << " at character " << i << ", line:\n"
              << repros[0].substr(nl == std::string::npos ? 0 : nl + 1, 200) << "\n(regenerate it: see the file's header)\n";
    return 1;
  }
  if (do_grad || do_vmap)
    std::cout << "transformation checks: " << transform_secs << " s of the total"
              << (known_skipped ? ", " + std::to_string(known_skipped) + " seeds skipped as known bugs" : "") << "\n";
  return mismatches + crashes + grads.failed + vmaps.failed > 0 ? 1 : 0;
}
