package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
)

// RocketMQ 5's haStatus: a master's slaves with their lag, or a slave's link to its master.

// defaultHAStatusInterval is haStatus's -i when given empty, RocketMQ's 3 s.
const defaultHAStatusInterval = 3

func init() {
	commands = append(commands,
		command{name: "haStatus", desc: "Fetch ha runtime status data.", exec: haStatus,
			options: []option{{short: "c", long: "clusterName", usage: "which cluster"},
				{short: "b", long: "brokerAddr", usage: "which broker to fetch"},
				{short: "i", long: "interval", usage: "the interval(second) of get info"}},
			check: oneOf("b", "c")},
	)
}

type haStatusRow struct {
	Addr string               `json:"brokerAddr"`
	Info *admin.HARuntimeInfo `json:"haRuntimeInfo"`
}

// haStatus prints -b's replication state, or that of every master of -c; with -i again every
// -i seconds until interrupted (-json prints once).
func haStatus(ctx context.Context, e *env) (any, func(io.Writer), error) {
	interval, err := e.int("i", defaultHAStatusInterval)
	if err != nil {
		return nil, nil, err
	}
	if interval <= 0 {
		return nil, nil, usageErrorf("-i: %d seconds", interval)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	fetch := func() ([]haStatusRow, error) {
		addrs, err := targets(ctx, e, a)
		if err != nil {
			return nil, err
		}
		rows := make([]haStatusRow, 0, len(addrs))
		for _, addr := range addrs {
			info, err := a.HAStatus(ctx, addr)
			if err != nil {
				return rows, err
			}
			rows = append(rows, haStatusRow{Addr: addr, Info: info})
		}
		return rows, nil
	}
	rows, err := fetch()
	if err != nil {
		return nil, haText(rows), err
	}
	if !e.has("i") || e.json {
		return rows, haText(rows), nil
	}
	return nil, func(w io.Writer) {
		for {
			haText(rows)(w)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(interval) * time.Second):
			}
			next, err := fetch()
			if err != nil {
				fmt.Fprintf(e.stderr, "mqadmin haStatus: %v\n", err)
				continue
			}
			rows = next
		}
	}, nil
}

// haText prints each broker's state as RocketMQ's HAStatusSubCommand does.
func haText(rows []haStatusRow) func(io.Writer) {
	return text(func(b *strings.Builder) {
		for _, r := range rows {
			info := r.Info
			if info.Master {
				fmt.Fprintf(b, "\n#MasterAddr\t%s\n#MasterCommitLogMaxOffset\t%d\n#SlaveNum\t%d\n#InSyncSlaveNum\t%d\n", r.Addr,
					info.MasterCommitLogMaxOffset, len(info.HAConnectionInfo), info.InSyncSlaveNums)
				fmt.Fprintf(b, "%-32s  %-16s %16s %16s %16s %16s\n", "#SlaveAddr", "#SlaveAckOffset", "#Diff",
					"#TransferSpeed(KB/s)", "#Status", "#TransferFromWhere")
				for _, c := range info.HAConnectionInfo {
					status := "Fall Behind"
					if c.InSync {
						status = "OK"
					}
					fmt.Fprintf(b, "%-32s  %-16d %16d %16.2f %16s %16d\n", c.Addr, c.SlaveAckOffset, c.Diff,
						float64(c.TransferredByteInSecond)/1024, status, c.TransferFromWhere)
				}
				continue
			}
			c := info.HAClientRuntimeInfo
			fmt.Fprintf(b, "\n#MasterAddr\t%s\n", c.MasterAddr)
			fmt.Fprintf(b, "#CommitLogMaxOffset\t%d\n", c.MaxOffset)
			fmt.Fprintf(b, "#TransferSpeed(KB/s)\t%.2f\n", float64(c.TransferredByteInSecond)/1024)
			fmt.Fprintf(b, "#LastReadTime\t%s\n", humanTime(time.UnixMilli(c.LastReadTimestamp)))
			fmt.Fprintf(b, "#LastWriteTime\t%s\n", humanTime(time.UnixMilli(c.LastWriteTimestamp)))
			fmt.Fprintf(b, "#MasterFlushOffset\t%d\n", c.MasterFlushOffset)
		}
	})
}
