//go:build linux

package kernelsim

const (
	arch                     = 0xC00000B7 // AUDIT_ARCH_AARCH64
	sysClone                 = 220
	sysUnshare               = 97
	sysClone3                = 435
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
)
