"""linkscope.measure"""
