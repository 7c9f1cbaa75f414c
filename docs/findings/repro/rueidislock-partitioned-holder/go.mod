module github.com/lockchaos/lockchaos/docs/findings/repro/rueidislock-partitioned-holder

go 1.26.8

require github.com/redis/rueidis v1.0.79

require golang.org/x/sys v0.47.0 // indirect
