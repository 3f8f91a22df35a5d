package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Controller commands (RocketMQ 5's mqadmin getControllerMetaData and electMaster): where the
// deployment has a cluster secret they need it (-cluster-secret or $MQ_CLUSTER_SECRET).

func getControllerMetaData(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	md, err := a.ControllerMetadata(ctx, e.str("a"))
	if err != nil {
		return nil, nil, err
	}
	return md, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "ControllerLeaderId: %s\n", md.LeaderID)
		fmt.Fprintf(b, "ControllerLeaderAddress: %s\n", md.LeaderAddr)
		fmt.Fprintf(b, "IsLeader: %v\n", md.IsLeader)
		for _, p := range strings.Split(md.Peers, ";") {
			if p != "" {
				fmt.Fprintf(b, "#Peer: %s\n", p)
			}
		}
	}), nil
}

func electMaster(ctx context.Context, e *env) (any, func(io.Writer), error) {
	id, err := e.int("b", -1)
	if err != nil {
		return nil, nil, err
	}
	if id <= 0 {
		return nil, nil, usageErrorf("-b: broker id %d, want one above 0", id)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	res, err := a.ElectMaster(ctx, e.str("a"), e.str("c"), e.str("bn"), id)
	if err != nil {
		return nil, nil, err
	}
	return res, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "\n#ClusterName\t%s\n#BrokerName\t%s\n", e.str("c"), e.str("bn"))
		fmt.Fprintf(b, "#BrokerMasterAddr\t%s\n#BrokerMasterId\t%d\n#MasterEpoch\t%d\n#SyncStateSet\t%v\n",
			res.MasterAddress, res.MasterBrokerID, res.MasterEpoch, res.SyncStateSet)
	}), nil
}
