//go:build !cgo

package sqlite

// The store is SQLite through cgo (mattn/go-sqlite3). Without cgo that
// driver compiles to a stub and a binary could not open any database, so
// a build without cgo stops here, first, with the fix in the error:
// "undefined: toolpulse_needs_cgo_set_CGO_ENABLED_1_and_install_a_C_compiler".
var _ = toolpulse_needs_cgo_set_CGO_ENABLED_1_and_install_a_C_compiler
