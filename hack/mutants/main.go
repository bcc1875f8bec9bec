// Command mutants is a mutation test of package queue/shard: it plants
// the plausible bugs listed in mutants.go into the package's non-test code
// (and into queue/internal/engagement, whose engagements of a fleet's
// clusters the package's simulation runs too), one at a time, and reports
// which of them the package's tests catch, and which the seeded
// simulation (TestSimulation) catches on its own. A mutant may name
// another package whose tests are to catch it (queue/leader and
// queue/internal/lease, for the timeouts of Lease requests;
// queue/multicluster, for the Fleet's probe and sync timeouts): it runs
// only that package's tests, which have no simulation.
//
// Run it from the module's root (make mutants does):
//
//	go run ./hack/mutants [-run REGEXP] [-j 2] [-timeout 10m] [-rev REV] [-report-only]
//	go run ./hack/mutants -run REGEXP -tests REGEXP -schedules 500   # a quick run, below
//	go run ./hack/mutants -check   # every mutant applies and compiles; no tests
//	go run ./hack/mutants -list
//
// The packages' .go files are read once, from the work tree or from the
// git revision -rev, and every build sees that snapshot through go test
// -overlay, with one file replaced by its mutated copy: the work tree is
// never written, edits made while the command runs do not mix in, and
// mutants run in parallel. A mutant whose snippet does not occur exactly
// once in its file is stale, and the command stops before running
// anything.
//
// First the unmutated snapshot must pass the runs below, for each package
// whose tests the selected mutants name. Then, for each mutant, its
// package must compile with it (otherwise the mutant is reported invalid,
// never caught), and, for a mutant of queue/shard's tests, two runs
// follow: the simulation alone (go test -run '^TestSimulation$', 5,000
// schedules) and all of the package's tests; for one of another package,
// all of that package's tests. A run catches the mutant when it fails, also by timing
// out. A mutant the simulation catches is caught by the package's tests,
// which include the same run, so they do not run again; for one it does
// not catch, the package's other tests run. The command prints a Markdown table and the scores, writes them and every run's
// output to -logs, and exits 1 if a mutant survived both runs (0 with
// -report-only), 2 if the snapshot fails or a mutant is stale or invalid.
//
// A quick run restricts both runs, for the baseline and every mutant
// alike: -tests REGEXP runs only the package tests it matches (go test
// -run REGEXP, in every tested package) instead of all of them, and
// -schedules N makes the simulation explore N schedules instead of 5,000
// (its flag -shard.sim.schedules). The report then says the run was
// restricted: a mutant it does not catch may still be caught by a test it
// left out or a schedule past N; one it catches is caught.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pkgDir is the package whose tests catch a mutant that names none,
// relative to the module root; its tests include the simulation.
const pkgDir = "queue/shard"

// snapDirs are the packages whose code the mutants change and whose tests
// may catch them: the package under test, the engagements of
// multicluster.Fleet, which its simulation runs too, leader election, the
// rule of the Lease requests' timeouts, which both share, and the Fleet
// itself (its probe and sync timeouts).
var snapDirs = []string{pkgDir, "queue/internal/engagement", "queue/leader", "queue/internal/lease", "queue/multicluster"}

// snapName is the name of a module-relative file's copy in the snapshot's
// directory.
func snapName(path string) string { return strings.ReplaceAll(path, "/", "_") }

// simTest selects the simulation among the package's tests.
const simTest = "^TestSimulation$"

type options struct {
	run        *regexp.Regexp
	jobs       int
	timeout    time.Duration
	rev        string
	reportOnly bool
	check      bool
	list       bool
	logs       string
	goCmd      string
	tests      string // -run of the package tests; "" runs them all
	schedules  int    // the simulation's schedules; 0 leaves its default
}

func main() {
	var o options
	run := flag.String("run", "", "run only the mutants whose names match this regular expression")
	flag.IntVar(&o.jobs, "j", 2, "mutants tested at once")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "timeout of each go test run")
	flag.StringVar(&o.rev, "rev", "", "test the packages ("+strings.Join(snapDirs, ", ")+") as of this git revision instead of the work tree")
	flag.BoolVar(&o.reportOnly, "report-only", false, "exit 0 even if a mutant survives")
	flag.BoolVar(&o.check, "check", false, "only check that every mutant applies and compiles")
	flag.BoolVar(&o.list, "list", false, "print the mutants and exit")
	flag.StringVar(&o.logs, "logs", "_output/mutants", "directory for the report and every run's output (relative to the module root)")
	flag.StringVar(&o.goCmd, "go", "go", "the go command")
	flag.StringVar(&o.tests, "tests", "", "quick run: the package-test runs (the baseline's too) run only the tests this regular expression matches (go test -run)")
	flag.IntVar(&o.schedules, "schedules", 0, "quick run: the simulation explores this many schedules (0: its default, 5,000)")
	flag.Parse()
	var err error
	if o.run, err = regexp.Compile(*run); err != nil {
		fmt.Fprintln(os.Stderr, "mutants: -run:", err)
		os.Exit(2)
	}
	if _, err := regexp.Compile(o.tests); err != nil {
		fmt.Fprintln(os.Stderr, "mutants: -tests:", err)
		os.Exit(2)
	}
	if o.schedules < 0 {
		fmt.Fprintln(os.Stderr, "mutants: -schedules must not be negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, o)
	stop()
	os.Exit(code)
}

func runMain(ctx context.Context, o options) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "mutants: "+format+"\n", args...)
		return 2
	}
	var selected []mutant
	for _, m := range mutants {
		if o.run.MatchString(m.name) {
			selected = append(selected, m)
		}
	}
	if o.list {
		for _, m := range selected {
			fmt.Printf("%-38s %-17s %-20s %s: %s\n", m.name, m.class, m.testPkg(), m.file, m.what)
		}
		return 0
	}
	if len(selected) == 0 {
		return fail("no mutant matches -run %q", o.run)
	}
	root, err := moduleRoot(ctx, o.goCmd)
	if err != nil {
		return fail("%v", err)
	}
	if err := checkTable(); err != nil {
		return fail("%v", err)
	}
	tmp, err := os.MkdirTemp("", "mutants-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	snap, err := takeSnapshot(ctx, root, o.rev, filepath.Join(tmp, "snapshot"))
	if err != nil {
		return fail("%v", err)
	}
	// Every mutant must apply before anything runs.
	var stale []string
	for _, m := range selected {
		if n := strings.Count(snap.files[m.file], m.old); n != 1 {
			stale = append(stale, fmt.Sprintf("%s: its snippet occurs %d times in %s (%s), want once:\n%s", m.name, n, m.file, snap.desc, indent(m.old)))
		}
	}
	if len(stale) > 0 {
		return fail("stale mutants; update them in hack/mutants/mutants.go:\n%s", strings.Join(stale, "\n"))
	}
	logs := o.logs
	if !filepath.IsAbs(logs) {
		logs = filepath.Join(root, logs)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fail("%v", err)
	}
	r := &runner{o: o, root: root, snap: snap, logs: logs, tmp: tmp}

	start := time.Now()
	pkgs := testedPkgs(selected)
	fmt.Printf("mutation test of %s at %s: %d mutants, %d at once\n", strings.Join(pkgs, ", "), snap.desc, len(selected), o.jobs)
	if o.restricted() {
		fmt.Printf("restricted run: %s\n", o.restriction())
	}
	if !o.check {
		if code := r.baseline(ctx, pkgs); code != 0 {
			return code
		}
	}

	results := make([]result, len(selected))
	next := make(chan int)
	var wg sync.WaitGroup
	var printMu sync.Mutex
	done := 0
	for range max(1, o.jobs) {
		wg.Go(func() {
			for i := range next {
				results[i] = r.test(ctx, selected[i])
				printMu.Lock()
				done++
				fmt.Printf("[%d/%d] %s\n", done, len(selected), results[i].line())
				printMu.Unlock()
			}
		})
	}
	for i := range selected {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return fail("interrupted")
	}

	var report bytes.Buffer
	code := writeReport(&report, o, strings.Join(pkgs, ", "), snap.desc, results, time.Since(start))
	os.Stdout.Write(report.Bytes())
	if err := os.WriteFile(filepath.Join(logs, "report.md"), report.Bytes(), 0o644); err != nil {
		return fail("%v", err)
	}
	return code
}

// baseline runs the tests of the unmutated snapshot that the mutants'
// runs repeat: for pkgDir the simulation alone and all tests, for another
// package all its tests. It returns the exit code, 0 if they pass.
func (r *runner) baseline(ctx context.Context, pkgs []string) int {
	// A run's pattern "" is the package tests: goTestOnce restricts it to
	// -tests, and the simulation to -schedules, as for the mutants.
	type run struct{ pkg, pattern, log, what string }
	var runs []run
	for _, pkg := range pkgs {
		if pkg == pkgDir {
			runs = append(runs, run{pkg, simTest, "baseline.sim", "the simulation"})
		}
		runs = append(runs, run{pkg, "", "baseline.all", "all tests"})
	}
	for i := range runs {
		if r.o.tests != "" && runs[i].pattern == "" {
			runs[i].what = "the tests -tests selects"
		}
		if runs[i].pkg != pkgDir {
			runs[i].log = "baseline." + snapName(runs[i].pkg)
			runs[i].what += " of " + runs[i].pkg
		}
	}
	fmt.Println("the unmutated packages first:", strings.Join(pkgs, ", "))
	results := make([]runResult, len(runs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(2, r.o.jobs) {
		wg.Go(func() {
			for i := range next {
				results[i] = r.goTest(ctx, runs[i].pkg, nil, runs[i].pattern, "", runs[i].log)
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "mutants: interrupted")
		return 2
	}
	var took []string
	for i, res := range results {
		if res.failed {
			fmt.Fprintf(os.Stderr, "mutants: the unmutated snapshot fails %s (see %s/%s.log); mutants mean nothing until it passes\n", runs[i].what, r.logs, runs[i].log)
			return 2
		}
		took = append(took, fmt.Sprintf("%s %s", runs[i].what, res.took.Round(time.Second)))
	}
	fmt.Printf("  passes: %s\n", strings.Join(took, ", "))
	return 0
}

// testedPkgs returns the packages whose tests the mutants run, pkgDir
// first.
func testedPkgs(ms []mutant) []string {
	var pkgs []string
	for _, dir := range snapDirs {
		for _, m := range ms {
			if m.testPkg() == dir {
				pkgs = append(pkgs, dir)
				break
			}
		}
	}
	return pkgs
}

// checkTable refuses a table with duplicate names, edits that change
// nothing, or a mutant outside the snapshot.
func checkTable() error {
	seen := map[string]bool{}
	for _, m := range mutants {
		switch {
		case seen[m.name]:
			return fmt.Errorf("two mutants are named %s", m.name)
		case m.old == "" || m.old == m.new:
			return fmt.Errorf("mutant %s changes nothing", m.name)
		case !slices.Contains(classes, m.class):
			return fmt.Errorf("mutant %s has an unknown class %q", m.name, m.class)
		case !slices.Contains(snapDirs, m.testPkg()):
			return fmt.Errorf("mutant %s names package %s, which is not among %s", m.name, m.testPkg(), strings.Join(snapDirs, ", "))
		case !slices.Contains(snapDirs, filepath.ToSlash(filepath.Dir(m.file))):
			return fmt.Errorf("mutant %s changes %s, which is not in %s", m.name, m.file, strings.Join(snapDirs, ", "))
		}
		seen[m.name] = true
	}
	return nil
}

// restricted reports whether -tests or -schedules make this a quick run.
func (o options) restricted() bool { return o.tests != "" || o.schedules > 0 }

// restriction describes a quick run's restrictions.
func (o options) restriction() string {
	var parts []string
	if o.tests != "" {
		parts = append(parts, fmt.Sprintf("package tests only -run %q", o.tests))
	}
	if o.schedules > 0 {
		parts = append(parts, fmt.Sprintf("simulation of %d schedules", o.schedules))
	}
	return strings.Join(parts, ", ")
}

func moduleRoot(ctx context.Context, goCmd string) (string, error) {
	out, err := exec.CommandContext(ctx, goCmd, "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run from within the ctrlkit module (go env GOMOD: %q, %v)", gomod, err)
	}
	root := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(root, pkgDir)); err != nil {
		return "", fmt.Errorf("no %s in module %s: %v", pkgDir, root, err)
	}
	return root, nil
}

// snapshot is the package's .go files as every run of this command sees
// them.
type snapshot struct {
	dir   string            // holds a copy of every file, by base name
	files map[string]string // module-relative path -> contents
	desc  string
}

func takeSnapshot(ctx context.Context, root, rev, dir string) (*snapshot, error) {
	s := &snapshot{dir: dir, files: map[string]string{}}
	head, err := gitLine(ctx, root, "rev-parse", "--short", "HEAD")
	if err != nil {
		return nil, err
	}
	if rev != "" {
		commit, err := gitLine(ctx, root, "rev-parse", "--short", rev+"^{commit}")
		if err != nil {
			return nil, err
		}
		for _, dir := range snapDirs {
			names, err := git(ctx, root, "ls-tree", "--name-only", commit, "--", dir+"/")
			if err != nil {
				return nil, err
			}
			for name := range strings.FieldsSeq(names) {
				if strings.HasSuffix(name, ".go") {
					if s.files[name], err = git(ctx, root, "show", commit+":"+name); err != nil {
						return nil, err
					}
				}
			}
		}
		s.desc = "commit " + commit
	} else {
		for _, dir := range snapDirs {
			entries, err := os.ReadDir(filepath.Join(root, dir))
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".go") {
					b, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
					if err != nil {
						return nil, err
					}
					s.files[dir+"/"+e.Name()] = string(b)
				}
			}
		}
		s.desc = "commit " + head
		if changed, err := git(ctx, root, append([]string{"status", "--porcelain", "--"}, snapDirs...)...); err == nil && strings.TrimSpace(changed) != "" {
			s.desc += " with the work tree's changes to " + strings.Join(snapDirs, ", ")
		}
	}
	if len(s.files) == 0 {
		return nil, fmt.Errorf("no Go files in %s at %s", strings.Join(snapDirs, ", "), s.desc)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for name, text := range s.files {
		if err := os.WriteFile(filepath.Join(dir, snapName(name)), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// gitLine is git's output without its final newline.
func gitLine(ctx context.Context, root string, args ...string) (string, error) {
	out, err := git(ctx, root, args...)
	return strings.TrimSpace(out), err
}

type runner struct {
	o          options
	root, logs string
	tmp        string
	snap       *snapshot
}

// overlay writes an overlay that shows the snapshot, with the files in
// replace (module-relative path -> backing file) instead, and hides the
// package's files that are not in the snapshot; it returns its path.
func (r *runner) overlay(replace map[string]string, name string) (string, error) {
	ov := map[string]string{}
	for _, path := range r.treeFiles() {
		ov[filepath.Join(r.root, path)] = "" // not in the snapshot, unless set below
	}
	for path := range r.snap.files {
		ov[filepath.Join(r.root, path)] = filepath.Join(r.snap.dir, snapName(path))
	}
	for path, backing := range replace {
		ov[filepath.Join(r.root, path)] = backing
	}
	b, err := json.Marshal(map[string]any{"Replace": ov})
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.tmp, name+".overlay.json")
	return path, os.WriteFile(path, b, 0o644)
}

// treeFiles returns the module-relative paths of the snapshot packages'
// .go files in the work tree.
func (r *runner) treeFiles() []string {
	var paths []string
	for _, dir := range snapDirs {
		entries, _ := os.ReadDir(filepath.Join(r.root, dir))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") {
				paths = append(paths, dir+"/"+e.Name())
			}
		}
	}
	return paths
}

// runResult is how one go test run ended.
type runResult struct {
	failed, timedOut bool
	failing          []string // top-level tests that failed
	seed             string   // the simulation's failing seed
	took             time.Duration
	err              error // the run could not be made
}

var (
	failLine = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)
	seedLine = regexp.MustCompile(`seed (\d+): `)
	// runningLine names a test that was running when go test timed out.
	runningLine = regexp.MustCompile(`(?m)^\t\t(Test\S*) \(`)
)

// goTest runs go test of package pkg on the snapshot with replace, and
// -run pattern unless it is empty (then -run is -tests, if set); a pattern
// of "^$" compiles and runs nothing. A run of pkgDir's tests explores
// -schedules schedules in the simulation, if set.
func (r *runner) goTest(ctx context.Context, pkg string, replace map[string]string, pattern, skip, logName string) runResult {
	for range 3 {
		before := r.treeFiles()
		res := r.goTestOnce(ctx, pkg, replace, pattern, skip, logName)
		// A file added to the work tree while go read the package is in
		// neither the snapshot nor the overlay: run again without it.
		if slices.Equal(before, r.treeFiles()) || ctx.Err() != nil {
			return res
		}
	}
	return runResult{failed: true, err: errors.New("the package's files in the work tree keep changing")}
}

func (r *runner) goTestOnce(ctx context.Context, pkg string, replace map[string]string, pattern, skip, logName string) runResult {
	ov, err := r.overlay(replace, logName)
	if err != nil {
		return runResult{failed: true, err: err}
	}
	args := []string{"test", "-count=1", "-timeout=" + r.o.timeout.String(), "-overlay=" + ov}
	if pattern == "" {
		pattern = r.o.tests
	}
	if pattern != "" {
		args = append(args, "-run="+pattern)
	}
	if skip != "" {
		args = append(args, "-skip="+skip)
	}
	args = append(args, "./"+pkg+"/")
	if pkg == pkgDir && r.o.schedules > 0 {
		args = append(args, fmt.Sprintf("-shard.sim.schedules=%d", r.o.schedules))
	}
	// go test's own -timeout ends a hung test binary; this only backs it.
	runCtx, cancel := context.WithTimeout(ctx, r.o.timeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, r.o.goCmd, args...)
	cmd.Dir = r.root
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	res := runResult{took: time.Since(start)}
	text := out.String()
	_ = os.WriteFile(filepath.Join(r.logs, logName+".log"), []byte("$ go "+strings.Join(args, " ")+"\n"+text), 0o644)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit), runCtx.Err() != nil && ctx.Err() == nil:
		res.failed = true
		res.timedOut = runCtx.Err() != nil || strings.Contains(text, "panic: test timed out")
	default:
		res.failed, res.err = true, err
	}
	lines := failLine
	if res.timedOut {
		lines = runningLine
	}
	for _, m := range lines.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(res.failing, m[1]) {
			res.failing = append(res.failing, m[1])
		}
	}
	if m := seedLine.FindStringSubmatch(text); m != nil {
		res.seed = m[1]
	}
	return res
}

// result is what became of one mutant.
type result struct {
	m        mutant
	invalid  string // why the mutant does not build, if it does not
	sim, all runResult
	tested   bool // the tests ran (not with -check)
}

func (r *runner) test(ctx context.Context, m mutant) result {
	res := result{m: m}
	dir := filepath.Join(r.tmp, m.name)
	mutated := filepath.Join(dir, filepath.Base(m.file))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.invalid = err.Error()
		return res
	}
	if err := os.WriteFile(mutated, []byte(strings.Replace(r.snap.files[m.file], m.old, m.new, 1)), 0o644); err != nil {
		res.invalid = err.Error()
		return res
	}
	replace := map[string]string{m.file: mutated}
	pkg := m.testPkg()
	if build := r.goTest(ctx, pkg, replace, "^$", "", m.name+".build"); build.failed {
		res.invalid = fmt.Sprintf("does not build or vet (see %s.build.log)", m.name)
		if build.err != nil {
			res.invalid = build.err.Error()
		}
		return res
	}
	if r.o.check || ctx.Err() != nil {
		return res
	}
	res.tested = true
	if pkg != pkgDir {
		// No simulation: all the package's tests.
		res.all = r.goTest(ctx, pkg, replace, "", "", m.name+".all")
		return res
	}
	res.sim = r.goTest(ctx, pkg, replace, simTest, "", m.name+".sim")
	if res.sim.failed && res.sim.err == nil {
		// The package's tests include this very run.
		res.all = runResult{failed: true, failing: []string{"TestSimulation"}}
		return res
	}
	// The package's tests are the simulation, which passed, and the rest.
	res.all = r.goTest(ctx, pkg, replace, "", simTest, m.name+".rest")
	return res
}

func (res result) survived() bool {
	return res.invalid == "" && !res.sim.failed && !res.all.failed
}

// line is the progress line of a tested mutant.
func (res result) line() string {
	switch {
	case res.invalid != "":
		return fmt.Sprintf("%s: INVALID: %s", res.m.name, res.invalid)
	case !res.tested:
		return res.m.name + ": applies and builds"
	}
	plain := func(s string) string { return strings.Trim(s, "*") }
	if !res.m.simulated() {
		return fmt.Sprintf("%s: all tests of %s %s (%s)", res.m.name, res.m.testPkg(),
			plain(res.all.verdict(false)), res.all.took.Round(time.Second))
	}
	return fmt.Sprintf("%s: simulation %s (%s), all tests %s (%s)", res.m.name,
		plain(res.sim.verdict(true)), res.sim.took.Round(time.Second), plain(res.all.verdict(false)), res.all.took.Round(time.Second))
}

// verdict describes a run for the report.
func (r runResult) verdict(sim bool) string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case !r.failed:
		return "**survived**"
	case r.timedOut && len(r.failing) > 0:
		return "caught (timed out in " + strings.Join(r.failing, ", ") + ")"
	case r.timedOut:
		return "caught (timed out)"
	case sim && r.seed != "":
		return "caught (seed " + r.seed + ")"
	case !sim && len(r.failing) > 0:
		return "caught: " + strings.Join(r.failing, ", ")
	}
	return "caught"
}

func writeReport(w io.Writer, o options, pkgs, desc string, results []result, took time.Duration) int {
	fmt.Fprintf(w, "\nMutation test of %s at %s (%s, %s/%s, %d CPUs, %d mutants at once): %s.\n\n",
		pkgs, desc, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.jobs, took.Round(time.Second))
	if o.restricted() {
		fmt.Fprintf(w, "Restricted run (%s): a mutant that survives it may still be caught by a test or schedule it left out.\n\n", o.restriction())
	}
	var invalid, survivors []string
	for _, res := range results {
		if res.invalid != "" {
			invalid = append(invalid, res.m.name+": "+res.invalid)
		} else if res.survived() {
			survivors = append(survivors, res.m.name)
		}
	}
	if o.check {
		if len(invalid) > 0 {
			fmt.Fprintf(w, "Invalid mutants:\n\n- %s\n", strings.Join(invalid, "\n- "))
			return 2
		}
		fmt.Fprintf(w, "Every one of the %d mutants applies and builds.\n", len(results))
		return 0
	}
	fmt.Fprintln(w, "| mutant | class | the bug | simulation alone | all package tests |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, res := range results {
		sim, all := res.sim.verdict(true), res.all.verdict(false)
		if !res.m.simulated() {
			sim = "-"
			all += " (" + res.m.testPkg() + ")"
		}
		if res.invalid != "" {
			sim, all = "invalid", "invalid"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", res.m.name, res.m.class, res.m.what, sim, all)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| class | mutants | simulation alone | all package tests |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	total := score{}
	for _, class := range classes {
		s := score{}
		for _, res := range results {
			if res.m.class == class {
				s.add(res)
			}
		}
		if s.valid > 0 {
			sim := "-"
			if s.simulated > 0 {
				sim = fmt.Sprint(s.sim)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %d |\n", class, s.valid, sim, s.all)
			total.sim, total.all, total.valid, total.simulated = total.sim+s.sim, total.all+s.all, total.valid+s.valid, total.simulated+s.simulated
		}
	}
	// The simulation's share is of the mutants it ran against.
	fmt.Fprintf(w, "| **all** | **%d** | **%d (%s)** | **%d (%s)** |\n\n", total.valid, total.sim, pct(total.sim, total.simulated), total.all, pct(total.all, total.valid))
	if len(survivors) > 0 {
		fmt.Fprintf(w, "Survived both (caught by no test): %s.\n", strings.Join(survivors, ", "))
	} else {
		fmt.Fprintln(w, "Every mutant is caught.")
	}
	switch {
	case len(invalid) > 0:
		fmt.Fprintf(w, "\nInvalid mutants (fix them in hack/mutants/mutants.go):\n\n- %s\n", strings.Join(invalid, "\n- "))
		return 2
	case len(survivors) > 0 && !o.reportOnly:
		return 1
	}
	return 0
}

// score counts a class's valid mutants, those the simulation ran against,
// and those each run caught.
type score struct{ valid, simulated, sim, all int }

func (s *score) add(res result) {
	if res.invalid != "" {
		return
	}
	s.valid++
	if res.m.simulated() {
		s.simulated++
	}
	if res.sim.failed {
		s.sim++
	}
	if res.all.failed {
		s.all++
	}
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

func indent(s string) string { return "\t" + strings.ReplaceAll(s, "\n", "\n\t") }
