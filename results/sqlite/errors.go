package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mattn/go-sqlite3"
)

// Store errors come in two kinds, and the daemon treats them differently.
//
// A fault of the store (the file read-only, the disk full, a lock held by
// another process, an I/O error, even corruption) is the same for every
// write: the daemon holds its runs in memory and retries until the fault
// clears. A refusal of one write (a constraint the record breaks, a value
// of the wrong type or size, an operation id already stored) is about that
// record: retrying it gives the same answer, and holding it would stop
// every run queued behind it.
//
// An error SQLite does not classify, or one that is not SQLite's, counts as
// a fault: wrongly holding a run costs a slot of a bounded queue, wrongly
// dropping it loses it.

// Permanent reports whether err refuses one record for good: retrying the
// same write cannot succeed, whatever happens to the store. It is false for
// nil and for faults that may clear (busy, locked, full, read-only, I/O
// errors, a file that cannot be opened).
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var r *refusal
	if errors.As(err, &r) || errors.Is(err, ErrDuplicate) {
		return true
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrConstraint, // a NOT NULL, CHECK, UNIQUE or FOREIGN KEY the record breaks
		sqlite3.ErrMismatch, // a value of the wrong type for its column
		sqlite3.ErrTooBig,   // a string or blob over SQLite's limits
		sqlite3.ErrRange:    // a parameter out of range: a bug in the statement
		return true
	}
	return false
}

// refusal marks an error Permanent says is final. Its Permanent method is
// what the runner's write queue looks for (with errors.As), so that the
// runner need not import this package.
type refusal struct{ err error }

func (e *refusal) Error() string   { return e.err.Error() }
func (e *refusal) Unwrap() error   { return e.err }
func (e *refusal) Permanent() bool { return true }

// markPermanent returns err, wrapped so that it has a Permanent() bool method
// returning true when Permanent(err) holds, and unchanged otherwise. The
// record path passes its errors through it; a record that fails validation
// is a refusal too, see refuse.
func markPermanent(err error) error {
	if !Permanent(err) {
		return err
	}
	var r *refusal
	if errors.As(err, &r) {
		return err
	}
	return &refusal{err: err}
}

// refuse marks err, a record that breaks the domain's invariants, as final.
func refuse(err error) error {
	if err == nil {
		return nil
	}
	return &refusal{err: err}
}

// ErrReadOnly is returned, wrapped, by CheckWritable when the database file,
// or the directory that holds it and its -wal and -shm files, cannot be
// written by this process.
var ErrReadOnly = errors.New("read-only")

// CheckWritable tells, before Open, whether this process may write the
// database at path: the file and its -wal and -shm files when they exist,
// and the directory, where SQLite creates (and removes) the -wal and -shm
// files. It returns nil when they are writable or when the directory does
// not exist yet (Open creates it, and says so if it cannot), and otherwise
// an error wrapping ErrReadOnly that names the file and the cause: file
// modes, ownership, a read-only mount or an immutable file all show, for
// root too.
//
// The checks open each existing file for writing, without truncating or
// writing to it, and create and remove an empty temporary file in the
// directory; nothing else is touched.
func CheckWritable(path string) error {
	if path == "" {
		return errors.New("sqlite: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, name := range []string{abs, abs + "-wal", abs + "-shm"} {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return &readOnlyError{path: abs, err: err}
		}
		f.Close()
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(abs)+".write-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &readOnlyError{path: abs, err: fmt.Errorf("cannot create files in %s: %w", dir, err)}
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("sqlite: %s: removing the write check file: %w", abs, err)
	}
	return nil
}

// readOnlyError is CheckWritable's answer for a database it cannot write.
type readOnlyError struct {
	path string
	err  error
}

func (e *readOnlyError) Error() string {
	who := ""
	if uid := os.Geteuid(); uid >= 0 {
		who = fmt.Sprintf(" (running as uid %d)", uid)
	}
	base := filepath.Base(e.path)
	return fmt.Sprintf("the database %s is read-only: %v; toolpulse%s needs to write it and to create %s-wal and %s-shm in %s: "+
		"fix the permissions or the mount, or point storage.path (or --db) at a writable place",
		e.path, e.err, who, base, base, filepath.Dir(e.path))
}

func (e *readOnlyError) Unwrap() []error { return []error{ErrReadOnly, e.err} }
