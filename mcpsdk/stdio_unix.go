//go:build unix

package mcpsdk

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that ending the
// server ends what it started.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to cmd's process group; a group already gone is
// not an error.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
