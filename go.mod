module github.com/scriptlock/scriptlock

go 1.26.0
