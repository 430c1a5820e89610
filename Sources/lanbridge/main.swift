print("lanbridge")
