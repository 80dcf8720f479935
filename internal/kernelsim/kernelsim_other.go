//go:build !linux

package kernelsim

import "errors"

// Exec needs Linux's seccomp.
func Exec(k Kernel, argv, env []string) error {
	return errors.New("kernelsim: seccomp is Linux's")
}

// Supported says why kernels cannot be simulated here (seccomp is Linux's).
func Supported() error { return errors.New("kernelsim: seccomp is Linux's") }
