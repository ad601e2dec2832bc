/* realloc_steps [MIB] [ROUNDS] [STEP_KIB]: a buffer grown by realloc,
 * STEP_KIB (1 by default) a step, up to MIB MiB (default 200), written as
 * it grows, then freed; ROUNDS times (new-user trials 8 and 17). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc,char**argv){
  size_t limit=(size_t)(argc>1?atol(argv[1]):200)<<20; size_t sz=0; char *buf=NULL; unsigned long acc=0;
  int rounds = argc>2?atoi(argv[2]):1;
  size_t step = (size_t)(argc>3?atol(argv[3]):1)<<10;
  for(int r=0;r<rounds;r++){
  sz=0; buf=NULL;
  while(sz<limit){ char *nb=realloc(buf,sz+step); if(!nb){perror("realloc");return 1;} buf=nb; memset(buf+sz,(int)(sz>>10),step); sz+=step; acc+=buf[sz/2]; }
  free(buf);
  }
  printf("%lu\n",acc); return 0;
}
