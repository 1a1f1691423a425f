module github.com/scriptlock/scriptlock/drivers/valkeygo

go 1.26.0

require (
	github.com/scriptlock/scriptlock v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	github.com/valkey-io/valkey-go v1.0.79
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/scriptlock/scriptlock => ../..
