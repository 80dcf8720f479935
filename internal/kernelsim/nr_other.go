//go:build linux && !amd64 && !arm64

package kernelsim

const (
	arch                                                                  = 0
	sysClone, sysUnshare, sysClone3                                       = 0, 0, 0
	sysLandlockCreateRuleset, sysLandlockAddRule, sysLandlockRestrictSelf = 0, 0, 0
)
