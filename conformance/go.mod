module github.com/scriptlock/scriptlock/conformance

go 1.26.0

require (
	github.com/scriptlock/scriptlock v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/scriptlock/scriptlock => ..
