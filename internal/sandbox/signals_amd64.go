//go:build linux && amd64

package sandbox

// The x86-64 numbers (refusing the x32 ABI's), and the i386 ones a 32-bit
// program uses on the same kernel.
var sigArches = []sigCalls{
	{arch: 0xC000003E, kill: 62, tkill: 200, tgkill: 234, sigqueue: 129, tgsigqueue: 297, pidfdSend: 424, fcntl: []uint32{72}, x32: true,
		socket: 41, bind: 49, connect: 42, listen: 50, sendto: 44, sendmsg: 46, sendmmsg: 307},
	{arch: 0x40000003, kill: 37, tkill: 238, tgkill: 270, sigqueue: 178, tgsigqueue: 335, pidfdSend: 424, fcntl: []uint32{55, 221},
		socket: 359, bind: 361, connect: 362, listen: 363, sendto: 369, sendmsg: 370, sendmmsg: 345, socketcall: 102},
}
