/*
 * Profile "default": sets nothing, so every TCP/memory option is lwIP 2.1.3's
 * own default from src/include/lwip/opt.h.
 */
