// Command testsummary reads `go test -json` and writes what go test would have printed, so
// that a suite's log reads as usual, while it counts each suite's tests: passed, failed and
// skipped, with each skip's reason. `testsummary report DIR` then prints every suite's counts
// and the skips, and ends with one line, "N passed, N failed, N skipped", so that neither CI nor
// a newcomer can miss a suite that did not run.
//
//	go test -json ./... | testsummary -suite unit -dir bin/test-summary
//	testsummary report bin/test-summary unit race e2e vms
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "report" {
		if len(os.Args) < 3 {
			fatal(fmt.Errorf("usage: testsummary report DIR [SUITE...]"))
		}
		if err := report(os.Stdout, os.Args[2], os.Args[3:]...); err != nil {
			fatal(err)
		}
		return
	}
	suite := flag.String("suite", "", "the suite's name, as the report shows it")
	dir := flag.String("dir", "bin/test-summary", "where each suite's counts go")
	verbose := flag.Bool("v", false, "print every test's output (the suite runs with -v)")
	flag.Parse()
	if *suite == "" || strings.ContainsAny(*suite, `/\`) {
		fatal(fmt.Errorf("-suite: want a name without slashes, got %q", *suite))
	}
	s, err := filter(os.Stdin, os.Stdout, *verbose)
	if err != nil {
		fatal(err)
	}
	if err := s.save(*dir, *suite); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testsummary:", err)
	os.Exit(2)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// Summary is one suite's counts, and why each skipped test skipped.
type Summary struct {
	Passed, Failed, Skipped int
	Skips                   []string
	// Broken are the packages that failed without a failing test (a build error, a panic
	// in TestMain): a suite with one has not run all it holds.
	Broken []string
}

// keptVerbose is how many of a test's last lines a verbose suite keeps, for its skip reason: its
// hours of output are printed as they come, not held.
const keptVerbose = 20

// filter copies go test's text out of its JSON events: package lines always, a test's output
// when it fails or skips, every line when verbose. Lines that are not JSON (the go command's
// own build errors) pass through as they are.
func filter(in io.Reader, out io.Writer, verbose bool) (*Summary, error) {
	s := &Summary{}
	held := map[string][]string{} // a test's output until it ends
	failedTests := map[string]int{}
	// A reader, not a scanner: a line of any length passes, so that the filter never stops
	// reading and leaves go test writing into a closed pipe.
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				return s, nil
			}
			return s, err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(out, string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if verbose || e.Test == "" {
				fmt.Fprint(out, e.Output)
			}
			if e.Test != "" {
				held[key] = append(held[key], e.Output)
				if verbose && len(held[key]) > keptVerbose {
					// Printed already; only a skip's reason is read from them.
					held[key] = held[key][len(held[key])-keptVerbose:]
				}
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" && failedTests[e.Package] == 0 {
					s.Broken = append(s.Broken, e.Package)
				}
				continue
			}
			lines := held[key]
			delete(held, key)
			switch e.Action {
			case "pass":
				s.Passed++
			case "fail":
				s.Failed++
				failedTests[e.Package]++
				if !verbose {
					fmt.Fprint(out, strings.Join(lines, ""))
				}
			case "skip":
				s.Skipped++
				s.Skips = append(s.Skips, e.Package+" "+e.Test+": "+skipReason(lines))
			}
		}
	}
}

// skipReason is what the test said as it skipped: its last line of output before the
// "--- SKIP" line, without the file and line go test puts before it.
func skipReason(lines []string) string {
	reason := ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") || strings.HasPrefix(t, "=== ") {
			continue
		}
		if i := strings.Index(t, ".go:"); i >= 0 {
			if j := strings.Index(t[i+4:], ": "); j >= 0 {
				t = t[i+4+j+2:]
			}
		}
		reason = t
	}
	if reason == "" {
		return "(no reason given)"
	}
	return reason
}

func (s *Summary) save(dir, suite string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, suite+".json"), raw, 0o644)
}

// report prints each suite's counts and skips, then the closing line. A suite of want that
// wrote no counts is named as not run.
func report(out io.Writer, dir string, want ...string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	var total Summary
	fmt.Fprintln(out, "=== what ran, suite by suite")
	ran := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var s Summary
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		suite := strings.TrimSuffix(filepath.Base(f), ".json")
		ran[suite] = true
		fmt.Fprintf(out, "%-12s %5d passed, %d failed, %d skipped\n", suite, s.Passed, s.Failed, s.Skipped)
		for _, p := range s.Broken {
			fmt.Fprintf(out, "             package failed outside its tests: %s\n", p)
		}
		for _, skip := range s.Skips {
			fmt.Fprintf(out, "             skipped %s\n", skip)
		}
		total.Passed += s.Passed
		total.Failed += s.Failed + len(s.Broken)
		total.Skipped += s.Skipped
	}
	for _, suite := range want {
		if !ran[suite] {
			fmt.Fprintf(out, "%-12s not run\n", suite)
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("no suite wrote its counts into %s", dir)
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", total.Passed, total.Failed, total.Skipped)
	return nil
}
