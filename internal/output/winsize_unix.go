//go:build unix

package output

import "golang.org/x/sys/unix"

// windowWidth asks the terminal on fd for its width; 0 when it cannot say.
func windowWidth(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
