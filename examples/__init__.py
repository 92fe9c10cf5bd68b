"""Complete user environments, written the way a graphtransfer user would write their own."""
