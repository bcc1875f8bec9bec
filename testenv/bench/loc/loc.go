// Package loc counts the lines of Go code of a set of files the way the
// comparison tables of docs/lines-of-code.md count them: lines that hold at least one token
// that is not a comment. Blank lines and comment-only lines do not count.
package loc

import (
	"fmt"
	"go/scanner"
	"go/token"
	"os"
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
