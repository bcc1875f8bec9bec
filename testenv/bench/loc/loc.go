// Package loc counts the lines of a set of files the way the comparison
// tables of docs/lines-of-code.md count them: of Go code, the lines that
// hold at least one token that is not a comment; of configuration, the
// lines that are neither blank nor a comment.
package loc

import (
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"strings"
)

// Count returns the number of code lines of the Go files.
func Count(files ...string) (int, error) {
	total := 0
	for _, f := range files {
		n, err := countFile(f)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func countFile(path string) (int, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	var scanErr error
	s.Init(file, src, func(pos token.Position, msg string) { scanErr = fmt.Errorf("%s: %s", pos, msg) }, 0)
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		// The scanner inserts semicolons at line ends; they are not code.
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		lines[file.Line(pos)] = true
	}
	return len(lines), scanErr
}

// CountConfig returns the number of lines of the configuration files
// (YAML, a Dockerfile, a Makefile) that hold something: blank lines and
// lines that are only a "#" comment do not count.
func CountConfig(files ...string) (int, error) {
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		total += countConfigLines(string(data))
	}
	return total, nil
}

func countConfigLines(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// MakeCommand returns the lines of the command of a Makefile that starts
// with prefix (after the recipe's tab) and mentions what, with the lines
// it continues onto with a trailing backslash.
func MakeCommand(makefile, prefix, what string) (string, error) {
	data, err := os.ReadFile(makefile)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), prefix) {
			continue
		}
		j := i
		for j < len(lines)-1 && strings.HasSuffix(lines[j], "\\") {
			j++
		}
		cmd := strings.Join(lines[i:j+1], "\n")
		if strings.Contains(cmd, what) {
			return cmd + "\n", nil
		}
		i = j
	}
	return "", fmt.Errorf("%s: no command starting with %q mentions %s", makefile, prefix, what)
}
