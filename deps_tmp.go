package ctrlkit

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/assert"
	_ "go.uber.org/goleak"
	_ "golang.org/x/time/rate"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/apimachinery/pkg/api/errors"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/klog/v2"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
)
