#!/bin/sh
printf "Content-Type: text/plain\r\n\r\nhello from cgi\n"
