package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procStat is what Linux's /proc says about a process at one moment.
type procStat struct {
	// CPU is the user plus system time of all its threads so far.
	CPU time.Duration
	// RSS is its resident set (VmRSS), HWM the peak of it (VmHWM).
	RSS, HWM int64
	Threads  int
}

// userHZ is the unit of the CPU times in /proc/PID/stat. The kernel fixes
// it at 100 for user space on every architecture Go supports on Linux,
// whatever its internal tick rate.
const userHZ = 100

// readProcStat reads /proc/PID/stat and /proc/PID/status; pid 0 is the
// calling process.
func readProcStat(pid int) (procStat, error) {
	dir := "/proc/self"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procStat{}, err
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return procStat{}, err
	}
	var ps procStat
	if ps.CPU, err = parseProcCPU(stat); err != nil {
		return procStat{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	if ps.RSS, ps.HWM, ps.Threads, err = parseProcStatus(status); err != nil {
		return procStat{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	return ps, nil
}

// parseProcCPU returns utime + stime from the text of /proc/PID/stat. The
// command name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseProcCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", b)
	}
	// After the name: state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	utime, err := strconv.ParseInt(f[14-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseInt(f[15-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// parseProcStatus returns VmRSS and VmHWM in bytes and Threads from the
// text of /proc/PID/status.
func parseProcStatus(b []byte) (rss, hwm int64, threads int, err error) {
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "VmRSS", "VmHWM":
			kb, perr := strconv.ParseInt(strings.TrimSuffix(value, " kB"), 10, 64)
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("%s: %w", key, perr)
			}
			if key == "VmRSS" {
				rss = kb * 1024
			} else {
				hwm = kb * 1024
			}
			found++
		case "Threads":
			n, perr := strconv.Atoi(value)
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("Threads: %w", perr)
			}
			threads = n
			found++
		}
	}
	if found != 3 {
		return 0, 0, 0, fmt.Errorf("VmRSS, VmHWM or Threads missing")
	}
	return rss, hwm, threads, nil
}

// machineCPU is the machine's CPU time so far, over all its CPUs: busy
// (user, nice, system, irq, softirq, steal) and idle (idle, iowait).
type machineCPU struct {
	Busy, Idle time.Duration
}

// readMachineCPU reads the first line of /proc/stat.
func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	return parseMachineCPU(b)
}

func parseMachineCPU(b []byte) (machineCPU, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		v[i] = n
	}
	const user, nice, system, idle, iowait, irq, softirq, steal = 0, 1, 2, 3, 4, 5, 6, 7
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return machineCPU{
		Busy: tick(v[user] + v[nice] + v[system] + v[irq] + v[softirq] + v[steal]),
		Idle: tick(v[idle] + v[iowait]),
	}, nil
}

// loadAverage is the one-minute load average, or -1 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
