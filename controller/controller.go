// Package controller turns on RocketMQ 5's controller in a node: import it and set
// mq.Options.Controller.Impl to Raft() alongside Controller.ID and Controller.Peers. The controller
// is a Raft group (hashicorp/raft, its log and stable store in one bbolt file, raft.db, in the
// layout raft-boltdb gave it, so data directories of earlier versions open unchanged) that
// elects a master for each broker group in controller mode; it lives in its own package so
// that an application that runs no controller does not link Raft and its dependencies.
//
//	n, err := mq.StartNode(mq.Options{
//		Controller: config.Controller{
//			ID:         "n0",
//			Peers:      map[string]string{"n0": "10.0.0.1:9880", "n1": "10.0.0.2:9880", "n2": "10.0.0.3:9880"},
//			RaftListen: "10.0.0.1:9880",
//			Impl:       controller.Raft(),
//		},
//	})
package controller

import (
	"github.com/mqgo/mq/internal/controller"
	"github.com/mqgo/mq/optional"
)

// Raft is the controller implementation for mq.Options.Controller.Impl: RocketMQ 5's controller
// (enableControllerInNamesrv) on a Raft group, served on the name service's listener.
func Raft() optional.Controller { return optional.NewController(controller.Factory{}) }
