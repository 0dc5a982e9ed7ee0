package faultrun
