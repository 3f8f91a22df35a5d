//go:build !unix

package remoting

import "errors"

func shutdownListener(int) error { return errors.ErrUnsupported }

func closeFD(int) {}
